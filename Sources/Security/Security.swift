// The `Security` module: Apple's Keychain Services API for Linux, built on `KeychainCore`.
//
// Names, raw values, defaults and status codes follow Apple's Security framework exactly
// (see `../shared/spec/keychain-services.md`); Linux-only features live in `KeychainCore`.
import Foundation
