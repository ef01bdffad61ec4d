#ifndef STREAMRELAY_CLIBEVENT_SHIM_H
#define STREAMRELAY_CLIBEVENT_SHIM_H
/* System headers first: libevent's event-config.h defines _GNU_SOURCE, which must not
   change how glibc's headers are seen by this module versus Swift's Glibc module. */
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
#include <pthread.h>
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#include <sys/eventfd.h>  /* EventLoop.post wakes a loop through an eventfd */
#endif
