#ifndef STREAMRELAY_CJWT_SHIM_H
#define STREAMRELAY_CJWT_SHIM_H
#include <jwt.h>
#endif
