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
/* Makes room for `len` more bytes in the connection's output buffer, growing it to at
 * least `reserve` free bytes at once when it must grow. hiredis starts a new, empty
 * buffer after each complete write and would otherwise grow it by doubling reallocs
 * while a loop turn's commands are appended (`sdsMakeRoomFor`, hiredis sds.h). */
static inline void streamrelay_redis_reserve_output(redisAsyncContext *ac, size_t len, size_t reserve) {
    redisContext *c = &ac->c;
    if (c->obuf == NULL || sdsavail(c->obuf) >= len) return;
    sds grown = sdsMakeRoomFor(c->obuf, len > reserve ? len : reserve);
    if (grown != NULL) c->obuf = grown;
}
#endif
