// The `Security` module: Apple's Keychain Services API for Linux, built on `KeychainCore`.
//
// Names, raw values, defaults and status codes follow Apple's Security framework exactly: its
// documentation (https://developer.apple.com/documentation/security/keychain_services) and its
// source (https://github.com/apple-oss-distributions/Security), whose files this module's comments
// cite by path, as "Apple's `keychain/securityd/SecItemServer.c`". Linux-only features live in
// `KeychainCore`.
//
// The module is built with library evolution, and every file imports the engine, KeychainPKI and
// swift-crypto `internal` and Foundation through `_SecurityFoundation`: a client then loads
// Foundation alone, never the engine's modules and the clang modules under them, which a target
// that sees this module without depending on it (`#if canImport(Security)`) is not given
// (issue 50, item 19; `CanImportSecurityTests`). Plain imports are internal here
// (InternalImportsByDefault); a `public import` of any other module would undo that.
internal import _SecurityFoundation
