#ifndef STREAMRELAY_CHIREDIS_SHIM_H
#define STREAMRELAY_CHIREDIS_SHIM_H
#include <hiredis.h>
#include <async.h>
#include <adapters/libevent.h>
#endif
