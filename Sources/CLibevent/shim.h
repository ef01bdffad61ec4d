#ifndef STREAMRELAY_CLIBEVENT_SHIM_H
#define STREAMRELAY_CLIBEVENT_SHIM_H
#include <event2/event.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/http.h>
#include <event2/http_struct.h>
#include <event2/keyvalq_struct.h>
#include <event2/listener.h>
#include <event2/util.h>
#endif
