// OpenSSL's libcrypto (Debian libssl-dev), for what swift-crypto has no API for:
// - constant-time modular exponentiation (BN_mod_exp_mont_consttime), used by the Secret
//   Service's finite-field Diffie-Hellman;
// - the PKCS#12 reader's decryption of legacy password-based encryption (PKCS12_pbe_crypt_ex
//   in a library context with the legacy provider: RC2, RC4, 3DES, DES), used by KeychainPKILegacy.
// - Blowfish-CBC and the SHA-1 compression function (BF_set_key, BF_cbc_encrypt, SHA1_Init,
//   SHA1_Transform), used by KeyringImport to read KWallet's files: KWallet encrypts with
//   Blowfish, and checks its contents with a SHA-1 that loads its words little-endian, which only
//   the compression function itself can compute.
// - the ANSI X9.63 KDF (EVP_KDF "X963KDF"), used by KeychainTPM: a TPM-resident key's ECDH
//   gives a shared secret as bytes, and swift-crypto derives keys only from a SharedSecret it
//   computed itself.
// Nothing else of libcrypto is used.
// Blowfish and SHA1_Transform are deprecated in OpenSSL 3 (they remain in libcrypto): no warnings.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/blowfish.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/evperr.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/pkcs12.h>
#include <openssl/pkcs12err.h>
#include <openssl/provider.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
