// OpenSSL's libcrypto (Debian libssl-dev), for the one thing swift-crypto has no API for:
// constant-time modular exponentiation (BN_mod_exp_mont_consttime), used by the Secret
// Service's finite-field Diffie-Hellman. Nothing else of libcrypto is used.
#include <openssl/bn.h>
