/*
 * size.h - the one grammar of a size in bytes: what the catalogue's
 * mem_limit, every SANDBOXD_* size, PUT /policy's sizes and a session's
 * disk budget are written in (issue 28: "1k" accepted by one door and
 * refused by another let a policy through that every open then failed
 * on).
 *
 * The grammar is Docker's memory syntax as the catalogue has always
 * checked it: 1 to 15 decimal digits, then at most one unit b, k, m or g
 * in either case (powers of 1024; no unit: bytes).  No sign, blank,
 * fraction or other unit: "1.5g", "1t", "2gb" and " 2g" are not sizes
 * (1.5g is 1536m).  A size is greater than zero and within the bounds of
 * what it sizes (struct size_bounds).
 *
 * Thread rule: none needed (no state).
 */
#ifndef SBX_SIZE_H
#define SBX_SIZE_H

/* What any size may be at most: a signed 64-bit count, as Docker's. */
#define SIZE_LARGEST ((1ull << 63) - 1)

/* "16384g" and a NUL: the longest size_format gives is 20 bytes. */
#define SIZE_FORMAT_MAX 24

/* The bounds of what a size sizes, and the names a message gives them
 * ("'1m' is below Docker's minimum of 6m"); a name NULL: "the minimum",
 * "the maximum". */
struct size_bounds {
	unsigned long long min, max;
	const char *min_name, *max_name;
};

/* A memory limit (mem_limit, SANDBOXD_MEM_LIMIT): Docker refuses one
 * under 6 MiB. */
extern const struct size_bounds size_memory;
/* A count of bytes (SANDBOXD_MAX_READ_BYTES and the like): 1 and up. */
extern const struct size_bounds size_bytes;

/*
 * s as a size within b: NULL with *bytes set; else why not (allocated,
 * the caller frees it), beginning with s quoted and escaped, cut after 60
 * characters ("'1k' is below Docker's minimum of 6m"), *bytes untouched.
 * s is never read past its NUL, whatever its length.
 */
char *size_parse(const char *s, const struct size_bounds *b,
		 unsigned long long *bytes);

/* bytes in the grammar, in the largest unit that divides it ("6m",
 * "16384g", "1000"): what a message shows of a bound. */
void size_format(unsigned long long bytes, char buf[SIZE_FORMAT_MAX]);

#endif
