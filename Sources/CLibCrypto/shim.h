// OpenSSL's libcrypto (Debian libssl-dev), for what swift-crypto has no API for:
// - constant-time modular exponentiation (BN_mod_exp_mont_consttime), used by the Secret
//   Service's finite-field Diffie-Hellman;
// - the PKCS#12 reader's decryption of legacy password-based encryption (PKCS12_pbe_crypt_ex
//   in a library context with the legacy provider: RC2, RC4, 3DES, DES), used by KeychainPKILegacy.
// Nothing else of libcrypto is used.
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evperr.h>
#include <openssl/pkcs12.h>
#include <openssl/pkcs12err.h>
#include <openssl/provider.h>
#include <openssl/x509.h>
