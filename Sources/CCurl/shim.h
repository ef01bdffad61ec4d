#ifndef STREAMRELAY_CCURL_SHIM_H
#define STREAMRELAY_CCURL_SHIM_H
/* System headers first, as in CLibevent's shim: every glibc header this module sees must be
   seen the same way by Swift's Glibc module (no feature macros may change them). */
#include <sys/types.h>
#include <sys/time.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <netdb.h>
#include <stdint.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <curl/curl.h>

/* Typed, non-variadic wrappers for libcurl's variadic setters and getters, which Swift
   cannot call. One per argument type; each returns libcurl's own result code. */

/** Write or header callback: `size_t cb(char *data, size_t size, size_t nmemb, void *userdata)`. */
typedef size_t (*sr_curl_data_callback)(char *data, size_t size, size_t nmemb, void *userdata);

static inline CURLcode sr_easy_setopt_long(CURL *h, CURLoption o, long v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sr_easy_setopt_off(CURL *h, CURLoption o, curl_off_t v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sr_easy_setopt_pointer(CURL *h, CURLoption o, void *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sr_easy_setopt_string(CURL *h, CURLoption o, const char *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sr_easy_setopt_slist(CURL *h, CURLoption o, struct curl_slist *v) { return curl_easy_setopt(h, o, v); }
static inline CURLcode sr_easy_setopt_data_callback(CURL *h, CURLoption o, sr_curl_data_callback v) { return curl_easy_setopt(h, o, v); }

static inline CURLMcode sr_multi_setopt_long(CURLM *m, CURLMoption o, long v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode sr_multi_setopt_pointer(CURLM *m, CURLMoption o, void *v) { return curl_multi_setopt(m, o, v); }
static inline CURLMcode sr_multi_setopt_socket_callback(CURLM *m, curl_socket_callback v) { return curl_multi_setopt(m, CURLMOPT_SOCKETFUNCTION, v); }
static inline CURLMcode sr_multi_setopt_timer_callback(CURLM *m, curl_multi_timer_callback v) { return curl_multi_setopt(m, CURLMOPT_TIMERFUNCTION, v); }

static inline CURLcode sr_easy_getinfo_long(CURL *h, CURLINFO i, long *out) { return curl_easy_getinfo(h, i, out); }
static inline CURLcode sr_easy_getinfo_pointer(CURL *h, CURLINFO i, void **out) { return curl_easy_getinfo(h, i, out); }
static inline CURLcode sr_easy_getinfo_string(CURL *h, CURLINFO i, const char **out) { return curl_easy_getinfo(h, i, out); }

/** `CURLMsg.data.result` (a union member; read here so Swift need not know the layout). */
static inline CURLcode sr_msg_result(const CURLMsg *m) { return m->data.result; }

#endif
