#ifndef STREAMRELAY_CHIREDIS_SHIM_H
#define STREAMRELAY_CHIREDIS_SHIM_H
/* System headers first, as in CLibevent (libevent's config defines _GNU_SOURCE). */
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netdb.h>
#include <stdint.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <errno.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <hiredis/hiredis.h>
#include <hiredis/async.h>
#include <hiredis/adapters/libevent.h>

/* The pointer stored in redisAsyncContext.data (hiredis leaves it to the caller). */
static inline void *streamrelay_redis_get_data(const redisAsyncContext *ac) { return ac->data; }
static inline void streamrelay_redis_set_data(redisAsyncContext *ac, void *p) { ac->data = p; }
#endif
