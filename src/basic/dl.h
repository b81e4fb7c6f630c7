/*
 * dl.h - optional libraries loaded on first use, the way systemd loads its
 * own (src/shared/dlfcn-util.h there).
 *
 * libcurl (the engine) and libpq (the audit) pull in dozens of libraries
 * that `sbxcat check` never needs, so they are not linked: the first call
 * that needs one dlopen()s it.  Two things keep that as safe as linking:
 *
 * - Each symbol is declared with the library's own prototype, through
 *   typeof on the declaration in the library's header:
 *       DLSYM_PROTOTYPE(PQexec);  =>  extern typeof(PQexec) *sym_PQexec;
 *   so every call through sym_PQexec is checked by the compiler against
 *   the header, and a dlsym() result of the wrong type cannot be assigned
 *   by accident.
 * - The dependency is recorded in an ELF note (ELF_NOTE_DLOPEN), following
 *   the FreeDesktop "ELF dlopen metadata" spec: section .note.dlopen, owner
 *   "FDO", type 0x407c0c0a, a JSON array as the payload.  Packaging tools
 *   (and `readelf -n sbxcat`) see the sonames as they see DT_NEEDED.
 *
 * dl_load() opens soname and resolves every symbol of the table, or sets
 * an error (status 3) that names the Debian package to install; it is
 * not thread-safe, dl_load_once() is.
 *
 * Thread rule: dl_load_once() may be called by any thread at once (a
 * lock).
 */
#ifndef SBX_DL_H
#define SBX_DL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sbx_error;

#define DLSYM_PROTOTYPE(symbol) extern typeof(symbol) *sym_##symbol
#define DLSYM_DEFINE(symbol) typeof(symbol) *sym_##symbol

struct dl_sym {
	void **slot;
	const char *name;
};
/* A table entry for sym_NAME, typed: the cast is only to void **. */
#define DLSYM_ENTRY(symbol)                                                    \
	{                                                                      \
		(void **)&sym_##symbol, #symbol                                \
	}

/*
 * A library loaded once per process: dl_load_once() opens it and runs
 * init (may be NULL) the first time, under a lock, and reports the same
 * outcome every time (status 3 on failure).
 */
struct dl_lib {
	const char *soname, *package;
	const struct dl_sym *syms;
	size_t nsyms;
	int (*init)(char **error); /* after the symbols; -1 with *error */
	bool tried;		   /* private */
	char *error;		   /* private */
};
int dl_load_once(struct dl_lib *lib, struct sbx_error **err);

/*
 * Open soname and fill every slot.  On failure: -1 and *error, an
 * allocated message naming package ("cannot load libpq.so.5 (apt-get
 * install libpq5): ...").  The handle is kept for the life of the process.
 */
int dl_load(const char *soname, const char *package, const struct dl_sym *syms,
	    size_t nsyms, char **error);

#define ELF_NOTE_DLOPEN_OWNER "FDO"
#define ELF_NOTE_DLOPEN_TYPE UINT32_C(0x407c0c0a)

/*
 * One note in .note.dlopen carrying payload (a JSON string literal).  The name
 * of the section makes GCC and gas give it type SHT_NOTE; `used` keeps it in
 * the object even though nothing reads it.  A note only reaches the
 * executable with its object file: see Makefile.am for pq-dl.o.
 */
#define ELF_NOTE_DLOPEN(variable, payload)                                     \
	__attribute__((used, section(".note.dlopen"))) _Alignas(               \
	    sizeof(uint32_t)) static const struct {                            \
		struct {                                                       \
			uint32_t n_namesz, n_descsz, n_type;                   \
		} nhdr;                                                        \
		char name[sizeof(ELF_NOTE_DLOPEN_OWNER)];                      \
		_Alignas(sizeof(uint32_t)) char json[sizeof(payload)];         \
	} variable = {                                                         \
	    .nhdr =                                                            \
		{                                                              \
		    .n_namesz = sizeof(ELF_NOTE_DLOPEN_OWNER),                 \
		    .n_descsz = sizeof(payload),                               \
		    .n_type = ELF_NOTE_DLOPEN_TYPE,                            \
		},                                                             \
	    .name = ELF_NOTE_DLOPEN_OWNER,                                     \
	    .json = payload,                                                   \
	}

#endif
