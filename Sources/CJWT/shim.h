#ifndef STREAMRELAY_CJWT_SHIM_H
#define STREAMRELAY_CJWT_SHIM_H
#include <jwt.h>
#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/pem.h>

/* Tiny OpenSSL helpers for RelayAuth (libjwt already links libcrypto).
 * No crypto is implemented here: these only call OpenSSL. */

/* Kinds returned by cjwt_public_key_kind. */
#define CJWT_KEY_UNPARSEABLE (-1)
#define CJWT_KEY_OTHER 0
#define CJWT_KEY_RSA 1
#define CJWT_KEY_EC_P256 2
#define CJWT_KEY_EC_OTHER 3

/* Parses a PEM "PUBLIC KEY" (SubjectPublicKeyInfo) the same way libjwt 1.10 does
 * (PEM_read_bio_PUBKEY) and reports its kind; *bits receives the key size in bits. */
static inline int cjwt_public_key_kind(const char *pem, int len, int *bits) {
    *bits = 0;
    BIO *bio = BIO_new_mem_buf(pem, len);
    if (bio == NULL) return CJWT_KEY_UNPARSEABLE;
    EVP_PKEY *pkey = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    if (pkey == NULL) return CJWT_KEY_UNPARSEABLE;
    int kind = CJWT_KEY_OTHER;
    *bits = EVP_PKEY_get_bits(pkey);
    switch (EVP_PKEY_get_base_id(pkey)) {
    case EVP_PKEY_RSA:
        kind = CJWT_KEY_RSA;
        break;
    case EVP_PKEY_EC: {
        char group[64] = {0};
        size_t glen = 0;
        kind = CJWT_KEY_EC_OTHER;
        if (EVP_PKEY_get_group_name(pkey, group, sizeof group, &glen) == 1
            && (strcmp(group, "prime256v1") == 0 || strcmp(group, "P-256") == 0))
            kind = CJWT_KEY_EC_P256;
        break;
    }
    default:
        break;
    }
    EVP_PKEY_free(pkey);
    return kind;
}

/* HMAC-SHA256 (RFC 2104) of data under key into out[32]. Returns 1 on success. */
static inline int cjwt_hmac_sha256(const unsigned char *key, int key_len,
                                   const unsigned char *data, size_t data_len,
                                   unsigned char *out) {
    unsigned int out_len = 0;
    static const unsigned char empty = 0;
    if (key == NULL) { key = &empty; key_len = 0; }
    if (data == NULL) { data = &empty; data_len = 0; }
    return HMAC(EVP_sha256(), key, key_len, data, data_len, out, &out_len) != NULL && out_len == 32;
}

/* SHA-256 (FIPS 180-4) of data into out (32 bytes): 1 on success. */
static inline int cjwt_sha256(const unsigned char *data, size_t data_len, unsigned char *out) {
    unsigned int out_len = 0;
    static const unsigned char empty = 0;
    if (data == NULL) { data = &empty; data_len = 0; }
    return EVP_Digest(data, data_len, out, &out_len, EVP_sha256(), NULL) == 1 && out_len == 32;
}

/* Constant-time equality of two n-byte buffers (OpenSSL CRYPTO_memcmp): 0 when equal. */
static inline int cjwt_memcmp_const(const void *a, const void *b, size_t n) {
    return CRYPTO_memcmp(a, b, n);
}

/* Frees a string returned by libjwt (jwt_encode_str, jwt_get_grants_json, …). */
static inline void cjwt_free_string(char *s) { free(s); }

#endif
