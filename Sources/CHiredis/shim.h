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

/* Makes room for `len` more bytes in the connection's output buffer, growing it to at
 * least `reserve` free bytes at once when it must grow. hiredis starts a new, empty
 * buffer after each complete write (`redisBufferWrite`) and would otherwise grow it by
 * doubling reallocs while a loop turn's commands are appended (`sdsMakeRoomFor`,
 * hiredis sds.h). */
static inline void streamrelay_redis_reserve_output(redisContext *c, size_t len, size_t reserve) {
    if (c->obuf == NULL || sdsavail(c->obuf) >= len) return;
    sds grown = sdsMakeRoomFor(c->obuf, len > reserve ? len : reserve);
    if (grown != NULL) c->obuf = grown;
}
/* Bytes appended and not yet written (`redisBufferWrite`). */
static inline size_t streamrelay_redis_output_length(const redisContext *c) {
    return c->obuf == NULL ? 0 : sdslen(c->obuf);
}
#endif
