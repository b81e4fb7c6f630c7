/*
 * svc-inside.c - file operations served from inside a session's
 * container (svc-inside.h).  Bodies to come; declarations first.
 */
#include "config.h"

#include "svc/svc-inside.h"
