#ifndef STREAMRELAY_COPENSSL_SHIM_H
#define STREAMRELAY_COPENSSL_SHIM_H
#include <stdlib.h>
#include <string.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/evp.h>
#include <openssl/param_build.h>
#include <openssl/pem.h>
#include <openssl/rand.h>

/* JWK (RFC 7517/7518 §6) ⇄ OpenSSL 3 keys for RelayAuth. No crypto is implemented here:
 * these only build keys from their parameters with EVP_PKEY_fromdata (OSSL_PARAM_BLD),
 * write them as PEM (which libjwt reads to verify and sign), generate test keys and read
 * their parameters back. Only plain C types cross into Swift. */

/* Big-endian unsigned integer parameters of a key, in/out. Unused entries: len 0. */
#define SROSSL_MAX_PARAMS 8
typedef struct {
    const unsigned char *data[SROSSL_MAX_PARAMS];
    size_t len[SROSSL_MAX_PARAMS];
} srossl_params;

/* Copies a memory BIO into a malloc'd NUL-terminated string (caller frees with free). */
static inline char *srossl_bio_string(BIO *bio) {
    char *mem = NULL;
    long n = BIO_get_mem_data(bio, &mem);
    if (n <= 0) return NULL;
    char *out = malloc((size_t)n + 1);
    if (out == NULL) return NULL;
    memcpy(out, mem, (size_t)n);
    out[n] = 0;
    return out;
}

static inline char *srossl_pem_of(EVP_PKEY *pkey, int private_key) {
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return NULL;
    int ok = private_key ? PEM_write_bio_PrivateKey(bio, pkey, NULL, NULL, 0, NULL, NULL)
                         : PEM_write_bio_PUBKEY(bio, pkey);
    char *out = ok == 1 ? srossl_bio_string(bio) : NULL;
    BIO_free(bio);
    return out;
}

static inline int srossl_push_bn(OSSL_PARAM_BLD *bld, const char *name, const unsigned char *p, size_t n, BIGNUM **keep) {
    *keep = BN_bin2bn(p, (int)n, NULL);
    return *keep != NULL && OSSL_PARAM_BLD_push_BN(bld, name, *keep) == 1;
}

/* Builds a key of `type` ("RSA", "EC") from the parameters in `bld` with EVP_PKEY_fromdata,
 * checks it (EVP_PKEY_public_check; EVP_PKEY_pairwise_check when `pairwise`), and returns
 * its PEM (malloc'd) or NULL. *bits (if not NULL) receives the key size. */
static inline char *srossl_finish(const char *type, OSSL_PARAM_BLD *bld, int private_key, int pairwise, int *bits) {
    char *out = NULL;
    EVP_PKEY *pkey = NULL;
    EVP_PKEY_CTX *check = NULL;
    OSSL_PARAM *params = OSSL_PARAM_BLD_to_param(bld);
    EVP_PKEY_CTX *ctx = EVP_PKEY_CTX_new_from_name(NULL, type, NULL);
    if (params == NULL || ctx == NULL || EVP_PKEY_fromdata_init(ctx) != 1) goto done;
    if (EVP_PKEY_fromdata(ctx, &pkey, private_key ? EVP_PKEY_KEYPAIR : EVP_PKEY_PUBLIC_KEY, params) != 1) goto done;
    check = EVP_PKEY_CTX_new_from_pkey(NULL, pkey, NULL);
    if (check == NULL || EVP_PKEY_public_check(check) != 1) goto done;
    if (pairwise && EVP_PKEY_pairwise_check(check) != 1) goto done;
    if (bits != NULL) *bits = EVP_PKEY_get_bits(pkey);
    out = srossl_pem_of(pkey, private_key);
done:
    EVP_PKEY_CTX_free(check);
    EVP_PKEY_CTX_free(ctx);
    EVP_PKEY_free(pkey);
    OSSL_PARAM_free(params);
    return out;
}

/* RSA key from big-endian n, e (public) and, when private, d, p, q, dp, dq, qi
 * (order: n e d p q dp dq qi; p..qi may be absent together). Returns a PEM
 * ("PUBLIC KEY" SubjectPublicKeyInfo or PKCS#8 "PRIVATE KEY"), malloc'd, or NULL.
 * *bits receives the modulus size. The key is checked (EVP_PKEY_public_check, and
 * EVP_PKEY_pairwise_check for private keys with CRT parameters). */
static inline char *srossl_rsa_pem(const srossl_params *in, int private_key, int *bits) {
    static const char *names[8] = {
        OSSL_PKEY_PARAM_RSA_N, OSSL_PKEY_PARAM_RSA_E, OSSL_PKEY_PARAM_RSA_D,
        OSSL_PKEY_PARAM_RSA_FACTOR1, OSSL_PKEY_PARAM_RSA_FACTOR2,
        OSSL_PKEY_PARAM_RSA_EXPONENT1, OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1 };
    BIGNUM *bn[8] = {0};
    char *out = NULL;
    *bits = 0;
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) return NULL;
    int count = private_key ? 8 : 2;
    for (int i = 0; i < count; i++) {
        if (in->len[i] == 0) {
            if (i >= 3 && private_key) continue; /* CRT parameters are optional */
            goto done;
        }
        if (!srossl_push_bn(bld, names[i], in->data[i], in->len[i], &bn[i])) goto done;
    }
    out = srossl_finish("RSA", bld, private_key, private_key && in->len[3] != 0, bits);
done:
    OSSL_PARAM_BLD_free(bld);
    for (int i = 0; i < 8; i++) BN_clear_free(bn[i]);
    return out;
}

/* EC key on `group` ("P-256", "P-384") from the affine x, y (each exactly the field size)
 * and, when private, d. Returns a PEM as srossl_rsa_pem does, or NULL when the point is
 * not on the curve (EVP_PKEY_public_check) or the private key does not match it. */
static inline char *srossl_ec_pem(const char *group, const srossl_params *in, int private_key) {
    char *out = NULL;
    BIGNUM *d = NULL;
    size_t n = in->len[0];
    if (n == 0 || n > 66 || in->len[1] != n) return NULL;
    unsigned char point[1 + 2 * 66];
    point[0] = 0x04; /* uncompressed (SEC 1 §2.3.3) */
    memcpy(point + 1, in->data[0], n);
    memcpy(point + 1 + n, in->data[1], n);
    OSSL_PARAM_BLD *bld = OSSL_PARAM_BLD_new();
    if (bld == NULL) return NULL;
    if (OSSL_PARAM_BLD_push_utf8_string(bld, OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1) goto done;
    if (OSSL_PARAM_BLD_push_octet_string(bld, OSSL_PKEY_PARAM_PUB_KEY, point, 1 + 2 * n) != 1) goto done;
    if (private_key) {
        if (in->len[2] == 0 || !srossl_push_bn(bld, OSSL_PKEY_PARAM_PRIV_KEY, in->data[2], in->len[2], &d)) goto done;
    }
    out = srossl_finish("EC", bld, private_key, private_key, NULL);
done:
    OSSL_PARAM_BLD_free(bld);
    BN_clear_free(d);
    return out;
}

/* Reads one big-endian parameter into a malloc'd buffer (*out, *len), padded to `pad`
 * bytes when pad > 0. Returns 1 on success. */
static inline int srossl_get_bn(EVP_PKEY *pkey, const char *name, int pad, unsigned char **out, size_t *len) {
    BIGNUM *bn = NULL;
    if (EVP_PKEY_get_bn_param(pkey, name, &bn) != 1) return 0;
    int n = pad > 0 ? pad : BN_num_bytes(bn);
    if (n == 0) n = 1;
    *out = malloc((size_t)n);
    int ok = *out != NULL && BN_bn2binpad(bn, *out, n) == n;
    BN_clear_free(bn);
    *len = (size_t)n;
    return ok;
}

/* Generates a key pair for tests and demos: kind 1 = RSA 2048 bits (e = 65537),
 * kind 2 = EC P-256, kind 3 = EC P-384. Writes its JWK parameters, malloc'd,
 * big-endian, into out->data/len (caller frees each data pointer):
 * RSA: n e d p q dp dq qi; EC: x y d (each padded to the field size).
 * Returns 1 on success. */
static inline int srossl_generate(int kind, srossl_params *out) {
    memset(out, 0, sizeof *out);
    EVP_PKEY *pkey = NULL;
    if (kind == 1) pkey = EVP_PKEY_Q_keygen(NULL, NULL, "RSA", (size_t)2048);
    else if (kind == 2) pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-256");
    else if (kind == 3) pkey = EVP_PKEY_Q_keygen(NULL, NULL, "EC", "P-384");
    if (pkey == NULL) return 0;
    int ok = 1;
    unsigned char **d = (unsigned char **)out->data;
    if (kind == 1) {
        static const char *names[8] = {
            OSSL_PKEY_PARAM_RSA_N, OSSL_PKEY_PARAM_RSA_E, OSSL_PKEY_PARAM_RSA_D,
            OSSL_PKEY_PARAM_RSA_FACTOR1, OSSL_PKEY_PARAM_RSA_FACTOR2,
            OSSL_PKEY_PARAM_RSA_EXPONENT1, OSSL_PKEY_PARAM_RSA_EXPONENT2, OSSL_PKEY_PARAM_RSA_COEFFICIENT1 };
        for (int i = 0; i < 8 && ok; i++) ok = srossl_get_bn(pkey, names[i], 0, &d[i], &out->len[i]);
    } else {
        int size = kind == 2 ? 32 : 48;
        ok = srossl_get_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_X, size, &d[0], &out->len[0])
          && srossl_get_bn(pkey, OSSL_PKEY_PARAM_EC_PUB_Y, size, &d[1], &out->len[1])
          && srossl_get_bn(pkey, OSSL_PKEY_PARAM_PRIV_KEY, size, &d[2], &out->len[2]);
    }
    EVP_PKEY_free(pkey);
    return ok;
}

/* Frees a string or buffer returned by these helpers. */
static inline void srossl_free(void *p) { free(p); }

/* AES-256-GCM (NIST SP 800-38D) through EVP, for values sealed at rest (RelayEventStore's
 * AtRestCipher). A context is made once per key and direction (the key schedule is done
 * once); each seal or open only sets its 12-byte nonce. Returns 1 on success; an open
 * returns 0 when the tag does not verify (wrong key, wrong associated data, altered bytes). */
static inline EVP_CIPHER_CTX *srossl_gcm_new(const unsigned char *key32, int encrypt) {
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (c == NULL) return NULL;
    int ok = encrypt ? EVP_EncryptInit_ex(c, EVP_aes_256_gcm(), NULL, key32, NULL)
                     : EVP_DecryptInit_ex(c, EVP_aes_256_gcm(), NULL, key32, NULL);
    if (ok != 1) { EVP_CIPHER_CTX_free(c); return NULL; }
    return c;
}

static inline void srossl_gcm_free(EVP_CIPHER_CTX *c) { EVP_CIPHER_CTX_free(c); }

static inline int srossl_gcm_seal(EVP_CIPHER_CTX *c, const unsigned char *nonce12,
                                  const unsigned char *aad, int aad_len,
                                  const unsigned char *pt, int n, unsigned char *ct, unsigned char *tag16) {
    int len = 0, fin = 0;
    if (EVP_EncryptInit_ex(c, NULL, NULL, NULL, nonce12) != 1) return 0;
    if (aad_len > 0 && EVP_EncryptUpdate(c, NULL, &len, aad, aad_len) != 1) return 0;
    len = 0;
    if (n > 0 && EVP_EncryptUpdate(c, ct, &len, pt, n) != 1) return 0;
    if (EVP_EncryptFinal_ex(c, ct + len, &fin) != 1) return 0;
    return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_GET_TAG, 16, tag16) == 1;
}

static inline int srossl_gcm_open(EVP_CIPHER_CTX *c, const unsigned char *nonce12,
                                  const unsigned char *aad, int aad_len,
                                  const unsigned char *ct, int n, const unsigned char *tag16, unsigned char *pt) {
    int len = 0, fin = 0;
    if (EVP_DecryptInit_ex(c, NULL, NULL, NULL, nonce12) != 1) return 0;
    if (aad_len > 0 && EVP_DecryptUpdate(c, NULL, &len, aad, aad_len) != 1) return 0;
    len = 0;
    if (n > 0 && EVP_DecryptUpdate(c, pt, &len, ct, n) != 1) return 0;
    if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_GCM_SET_TAG, 16, (void *)tag16) != 1) return 0;
    return EVP_DecryptFinal_ex(c, pt + len, &fin) == 1;
}

/* Fills buf with n bytes from OpenSSL's CSPRNG. Returns 1 on success. */
static inline int srossl_random(unsigned char *buf, int n) { return RAND_bytes(buf, n); }

#endif
