// swift-tools-version:6.2
import PackageDescription

// Keychain for Linux. One module per layer, dependencies pointing down to the engine:
//
//   KeychainModel           the vocabulary (items, queries, errors), the seam (KeychainHandle) and where the
//                           user's keychains are (KeychainPaths, KeychainPreferences); Foundation only
//   KeychainCore            the engine: encrypted, indexed, crash-safe item store (only its *_sqlite.swift
//                           files import GRDB)
//   KeychainPKI             X.509 and PKCS#12 on swift-asn1 + swift-crypto; knows nothing of keychains
//   Security                Apple's Keychain Services API (SecItem*, kSec*, errSec*) on KeychainModel and
//                           KeychainClient
//   _SecurityFoundation     Foundation re-exported to Security from a resilient module (Security's interface)
//   Keychain                the idiomatic Swift API (new code starts here)
//   KeychainStorage         named encrypted stores with a pluggable cipher
//   SwiftKeychain           protocol-oriented items
//   SecurityTool            the `security` command-line tool's commands (macOS security(1) compatible)
//   SecurityToolMain        the `security` executable
//   SecurityLinuxTool       the `security-linux` executable: `security sync` and `import-secret-service`,
//                           apart so that `security` does not load PostgreSQL's and D-Bus's code
//   KeychainAgent           keychaind's server library: who the caller is, its access groups, hardening, socket
//   keychain-bench          the benchmark (Benchmarks/keychain-bench) \ the repository's own tools, not products:
//   keychain-stress         the long adversarial suite               / `swift run keychain-bench` here only
//   SeededRandom            the seedable generator that the benchmark, stress suite and tests share
//   KeychainLibc            the C library (Glibc, Musl or Darwin) under one name: the one `#if canImport` import
//   DBusWire                D-Bus's wire format (types, values, marshalling, messages, SASL); no I/O framework, no keychain code
//   DBusNIO                 D-Bus connections and peer-to-peer servers on SwiftNIO, over DBusWire
//   KeychainAgentProtocol   the session agent's D-Bus method table and the a{sv} codec of items, queries and errors
//   KeychainClient          where modules get keychains (Keychains): the session agent's, or the engine's
//   SecretService           the freedesktop Secret Service (org.freedesktop.secrets) on the agent's keychains
//   keychaind               the session agent's executable
//   PAMKeychain             pam_keychain.so, the PAM module that unlocks the login keychain at login (C: PAM's ABI)
//   KeychainTPM             a TPM 2.0 through tpm2-tss's ESYS (CTSS2): the login keychain sealed to this machine
//   KeychainSync            sync of synchronizable items through PostgreSQL, end-to-end encrypted
//   PostgresScratchServer   a throw-away PostgreSQL server (initdb, pg_ctl) for the sync tests and benchmark
//   ScratchTPM              a throw-away swtpm for the TPM tests and benchmark
let package = Package(
    name: "keychain-linux",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "KeychainModel", targets: ["KeychainModel"]),
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
        .library(name: "KeychainClient", targets: ["KeychainClient"]),
        .library(name: "Security", targets: ["Security"]),
        .library(name: "LocalAuthentication", targets: ["LocalAuthentication"]),
        .library(name: "Keychain", targets: ["Keychain"]),
        .library(name: "KeychainStorage", targets: ["KeychainStorage"]),
        .library(name: "SwiftKeychain", targets: ["SwiftKeychain"]),
        .executable(name: "security", targets: ["SecurityToolMain"]),
        .executable(name: "security-linux", targets: ["SecurityLinuxTool"]),
        .executable(name: "keychaind", targets: ["keychaind"]),
        // The PAM module (libpam_keychain.so, installed as pam_keychain.so: docs/login.md).
        .library(name: "pam_keychain", type: .dynamic, targets: ["PAMKeychain"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-asn1", from: "1.7.4"),
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.2"),
        .package(url: "https://github.com/LebJe/TOMLKit", from: "0.6.0"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
    ],
    targets: [
        // Foundation and the C library only: every layer, the API products included, speaks it
        // without linking SQLite or swift-crypto.
        .target(name: "KeychainModel", dependencies: ["KeychainLibc"]),
        .target(
            name: "KeychainCore",
            dependencies: [
                "KeychainModel", "KeychainLibc",
                .product(name: "GRDB", package: "GRDB.swift"),
                // GRDB's own SQLite module: the hot read path steps statements and reads
                // columns through the C API (GRDB's documented raw-pointer access).
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "Security",
            dependencies: [
                // KeychainPKI parses certificates and PKCS#12 on swift-asn1 (never swift-certificates:
                // docs/keys-and-certificates.md says why).
                // KeychainModel and KeychainClient, never the engine (issue 51).
                "KeychainModel", "KeychainClient", "KeychainPKI", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                // KeychainLibc: imported `internal`, as Glibc was: Security's interface names no C library.
                "_SecurityFoundation", "KeychainLibc",
            ],
            // Every module sees every built module, so another package's `#if canImport(Security)`
            // (swift-certificates, Alamofire) compiles against ours whenever ours happens to be built
            // before it. A module built without library evolution makes its clients load its internal
            // imports too, and with them GRDB's and OpenSSL's clang modules, which such a target is
            // not given ("missing required module 'GRDBSQLite'"). Resilient, with the engine
            // imported `internal`, its interface needs Foundation alone, as Apple's does (issue 50,
            // item 19). Tools version 6.2 is what lets a package depending on this one accept the flag.
            // A plain `import` is internal here too, so that no new one exposes a module.
            swiftSettings: [
                .unsafeFlags(["-enable-library-evolution"]), .enableUpcomingFeature("InternalImportsByDefault"),
            ]
        ),
        // Foundation re-exported from a resilient module, so that `Security` imports it without
        // one "not compiled with library evolution" warning per file; the one it gets itself, for
        // its one line, is the only warning `-suppress-warnings` hides (see its source file).
        .target(
            name: "_SecurityFoundation",
            swiftSettings: [.unsafeFlags(["-enable-library-evolution", "-suppress-warnings"])]
        ),
        .target(
            name: "KeychainPKI",
            dependencies: [
                "KeychainPKILegacy", .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The API products import KeychainModel and KeychainClient, never the engine (issue 51).
        .target(name: "Keychain", dependencies: ["KeychainModel", "KeychainClient"]),
        .target(
            name: "KeychainStorage",
            dependencies: [
                "KeychainModel", "KeychainClient",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .target(name: "SwiftKeychain", dependencies: ["KeychainModel", "KeychainClient"]),
        .target(name: "SeededRandom"),
        // The C library under one name (Glibc, Musl or Darwin, re-exported), so that no other
        // source file repeats the `#if canImport(Glibc)` block.
        .target(name: "KeychainLibc"),
        .target(name: "DBusWire", dependencies: ["KeychainLibc"]),
        .target(
            name: "DBusNIO",
            dependencies: [
                "DBusWire", "KeychainLibc", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        // tpm2-tss's ESYS, TCTI loader and marshalling (libtss2-dev), for KeychainTPM.
        .systemLibrary(name: "CTSS2", providers: [.apt(["libtss2-dev"])]),
        // libfido2 (libfido2-dev), for UserPresence: FIDO2 security keys, the companion device.
        .systemLibrary(name: "CFido2", providers: [.apt(["libfido2-dev"])]),
        // A TPM 2.0 through tpm2-tss: sealing small secrets in salted, encrypted sessions.
        // CLibCrypto: the X9.63 KDF over a TPM-resident key's ECDH secret (tpm2-tss links libcrypto already).
        .target(name: "KeychainTPM", dependencies: ["CTSS2", "CLibCrypto", "KeychainModel"]),
        // The PAM module: C, because PAM's ABI is; it carries the login password to `keychaind --pam`
        // and nothing more (libpam0g-dev).
        .target(name: "PAMKeychain", linkerSettings: [.linkedLibrary("pam")]),
        // prctl, pidfd_open, accept4, pipe2, explicit_bzero, closefrom for posix_spawn: variadic or GNU-only in C.
        .target(name: "CKeychainAgent"),
        .target(
            name: "KeychainAgent",
            dependencies: [
                "KeychainCore", "CKeychainAgent", "DBusWire", "DBusNIO", "KeychainAgentProtocol", "KeychainLibc",
                // UserPresence: the agent asks polkit for its caller when an item asks for its owner.
                "UserPresence",
                .product(name: "TOMLKit", package: "TOMLKit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .executableTarget(
            name: "keychain-agent-test-worker",
            dependencies: [
                "KeychainAgent", "CKeychainAgent", "DBusWire", "DBusNIO", "KeychainAgentProtocol", "KeychainCore",
                "KeychainClient", "KeychainLibc",
            ],
            path: "Tests/AgentWorker"
        ),
        .target(
            name: "SecurityTool",
            dependencies: [
                // KeychainPKI and Crypto: the certificate commands' file diagnosis, digests and PEM keys.
                "KeychainModel", "KeychainClient", "Security", "KeychainPKI", "KeychainLibc",
                // UserPresence: security-key pairs FIDO2 keys (SecurityKey, SecurityKeyRegistry).
                "UserPresence",
                // KeychainTPM: `security secure-enclave` says which TPM holds Secure Enclave keys.
                "KeychainTPM",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .executableTarget(name: "SecurityToolMain", dependencies: ["SecurityTool"]),
        .executableTarget(
            name: "SecurityLinuxTool",
            dependencies: [
                "SecurityTool", "KeychainCore", "KeychainLibc", "SecretService", "KeyringImport", "KeePassFormat",
                "CredentialExchange", "DBusWire", "DBusNIO",
                "KeychainSync",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ]
        ),
        // The benchmark and the stress suite: executable targets of this repository, not products,
        // so a package that depends on this one never sees them (docs/layout.md says why they
        // are not a nested package).
        .executableTarget(
            name: "keychain-bench",
            dependencies: [
                // DBusWire, DBusNIO, NIOCore and SecretService: the Secret Service rows' client (its futures
                // waited for on the benchmark's threads), and the keychain attributes the provider
                // gives a D-Bus item (to seed its keychain as it would).
                "KeychainCore", "KeychainClient", "Security", "SeededRandom", "DBusWire", "DBusNIO", "SecretService",
                // KeyringImport: the move-in rows (GNOME Keyring's file against the same adds);
                // KeePassFormat and CArgon2: the KeePass rows (against libargon2's own call).
                "KeyringImport", "KeePassFormat", "CArgon2",
                // KeychainSync and PostgresScratchServer: the sync rows, on a private PostgreSQL.
                "KeychainSync", "PostgresScratchServer", .product(name: "PostgresNIO", package: "postgres-nio"),
                // ScratchTPM and KeychainTPM: the sealed login unlock's rows, on a private swtpm.
                "ScratchTPM", "KeychainTPM",
                // UserPresence: the proof an evaluated LAContext carries, for the access-controlled read;
                // CFido2: libfido2's own assertion, the floor of the companion rows.
                "UserPresence", "CFido2",
                // CKeychainAgent: the scheduler's CPU calls, for the agent's lookups on one CPU.
                // CLibCrypto: OpenSSL's PKCS12_parse, the floor of the legacy PKCS#12 row.
                "CKeychainAgent", "CLibCrypto", "KeychainLibc",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            path: "Benchmarks/keychain-bench"
        ),
        .executableTarget(
            name: "keychain-stress",
            dependencies: [
                "KeychainCore", "Security", "SeededRandom", "KeychainLibc",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/keychain-stress"
        ),
        // The test process's fixed environment (KEYCHAIN_AGENT=off before main) and the end of
        // the keychaind the tests share.
        .target(name: "CKeychainTestSupport", path: "Tests/CKeychainTestSupport"),
        // What the test targets above the seam share: the backends a keychain can be kept in and
        // the test process's keychaind (started once, on first use).
        .target(
            name: "KeychainTestSupport",
            dependencies: [
                "KeychainClient", "KeychainCore", "DBusWire", "DBusNIO", "CKeychainAgent", "CKeychainTestSupport",
                "KeychainLibc", "ScratchTPM",
            ],
            path: "Tests/KeychainTestSupport"
        ),
        // An application that calls SecItemAdd in its own process (SecretServiceTests' Seahorse test).
        .executableTarget(
            name: "keychain-secitem-worker",
            dependencies: ["Security", "KeychainLibc"],
            path: "Tests/SecItemWorker"
        ),
        .executableTarget(
            name: "keychain-test-worker",
            dependencies: ["KeychainCore", "KeychainLibc"],
            path: "Tests/Worker"
        ),
        // KeychainModel alone: no engine, no GRDB, no swift-crypto in this target.
        .testTarget(name: "KeychainModelTests", dependencies: ["KeychainModel"]),
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: [
                "KeychainCore", "keychain-test-worker", "SeededRandom", "KeychainLibc",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            exclude: ["Fixtures"]
        ),
        .testTarget(
            name: "KeychainAgentTests",
            dependencies: [
                "KeychainAgent", "KeychainCore", "CKeychainAgent", "CKeychainTestSupport", "keychain-agent-test-worker",
                "keychaind",
                "DBusWire", "DBusNIO",
                "KeychainAgentProtocol", "KeychainClient", "KeychainTestSupport", "SeededRandom", "KeychainLibc",
            ]
        ),
        .testTarget(
            name: "SecurityTests",
            dependencies: [
                "Security", "KeychainCore", "KeychainClient", "KeychainTestSupport", "keychaind", "SeededRandom",
                "KeychainLibc",
                // LocalAuthentication: the LAContext of kSecUseAuthenticationContext (.applicationPassword).
                "LocalAuthentication",
                // SecKey tests convert key formats for the openssl command line and check AES-GCM layouts.
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        // The seed documents' code, compiled as written (Swift 5 language mode).
        .testTarget(
            name: "SeedTests",
            dependencies: ["Security", "KeychainCore"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        .testTarget(
            name: "KeychainPKITests",
            dependencies: [
                "KeychainPKI", "SeededRandom",
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "KeychainTests",
            dependencies: ["Keychain", "KeychainCore", "KeychainClient", "KeychainTestSupport", "keychaind"]
        ),
        .testTarget(
            name: "KeychainStorageTests",
            dependencies: [
                "KeychainStorage", "KeychainCore", "KeychainClient", "KeychainTestSupport", "keychaind",
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        .testTarget(
            name: "SwiftKeychainTests",
            dependencies: ["SwiftKeychain", "KeychainCore", "KeychainClient", "KeychainTestSupport", "keychaind"],
            swiftSettings: [.swiftLanguageMode(.v5)]
        ),
        // The README's Swift snippets, extracted by scripts/extract-readme-snippets and compiled
        // (Swift 6 language mode, as a newcomer's package would); the test checks they are current.
        .testTarget(
            name: "ReadmeSnippetTests",
            dependencies: ["Keychain", "Security", .product(name: "Crypto", package: "swift-crypto")]
        ),
        .testTarget(
            name: "SecurityToolTests",
            dependencies: [
                "SecurityTool", "SecurityToolMain", "SecurityLinuxTool", "keychaind", "KeychainClient", "DBusWire",
                "DBusNIO",
                "KeychainCore", "SeededRandom", "KeychainTestSupport", "KeychainLibc",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(
            name: "BenchmarkTests",
            dependencies: [
                "keychain-bench", "keychaind", "KeychainCore", .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .target(name: "KeychainAgentProtocol", dependencies: ["KeychainCore", "DBusWire"]),
        .target(
            name: "KeychainClient",
            dependencies: [
                "KeychainModel", "KeychainCore", "KeychainAgentProtocol", "DBusWire", "CKeychainAgent", "KeychainLibc",
                // UserPresence: a read that may ask for the owner asks through polkit (docs/local-authentication.md).
                "UserPresence",
            ]
        ),
        .target(
            name: "SecretService",
            dependencies: [
                "DBusWire", "DBusNIO", "KeychainCore", "KeychainAgent",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"), "CLibCrypto",
            ]),
        // OpenSSH's agent protocol served from the keychain (docs/ssh-agent.md): keychaind's
        // SSH_AUTH_SOCK.
        .target(
            name: "SSHAgent",
            dependencies: [
                "KeychainModel", "KeychainAgent", "KeychainAgentProtocol", "CKeychainAgent", "DBusNIO", "KeychainLibc",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        // Other keyrings' files, read from disk to move in (docs/moving-in.md): GNOME Keyring's.
        .target(
            name: "KeyringImport",
            dependencies: [
                // CLibCrypto: KWallet's Blowfish and its SHA-1 variant (OpenSSL's compression function).
                "SecretService", "KeychainCore", "CLibCrypto", .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        // KeePass's KDBX 4 files, read from disk to move in: Argon2 by libargon2 (libargon2-dev),
        // the payload's gzip by zlib (zlib1g-dev), its XML by libxml2's reader (libxml2-dev). A module
        // of its own, so that keychaind, which moves GNOME Keyring's files in at login, links none
        // of them.
        .systemLibrary(name: "CArgon2", providers: [.apt(["libargon2-dev"])]),
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        .systemLibrary(name: "CLibXML2", pkgConfig: "libxml-2.0", providers: [.apt(["libxml2-dev"])]),
        .target(
            name: "KeePassFormat",
            dependencies: [
                "KeyringImport", "SecretService", "CArgon2", "CZlib", "CLibXML2",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]),
        // Whether the person at a process is its user: polkit (and its terminal agent) on Linux,
        // fprintd's fingerprint reader (Crypto: the hash of its enrolled fingers, the domain state),
        // and FIDO2 security keys through libfido2 (CFido2), the companion.
        .target(
            name: "UserPresence",
            dependencies: [
                "DBusWire", "KeychainLibc", "CKeychainAgent", "KeychainModel", "CFido2",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // Apple's LocalAuthentication surface over UserPresence.
        // KeychainModel: LAContext gives its application password to Security (ApplicationPasswordSource).
        // KeychainClient: an evaluation is made where the keychain is kept (keychaind or this process),
        // so that its proof spares the context's keychain reads the question.
        // Security: evaluateAccessControl takes a SecAccessControl, as Apple's does.
        // Crypto: LADomainState's combined hash.
        .target(
            name: "LocalAuthentication",
            dependencies: [
                "UserPresence", "KeychainModel", "KeychainClient", "Security",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // An app that evaluates an LAContext in its own process (LocalAuthenticationTests).
        .executableTarget(
            name: "keychain-la-worker", dependencies: ["LocalAuthentication", "Security"], path: "Tests/LAWorker"),
        .testTarget(
            name: "LocalAuthenticationTests",
            dependencies: [
                "LocalAuthentication", "UserPresence", "DBusWire", "KeychainTestSupport", "keychain-la-worker",
            ],
            exclude: ["Clients"]
        ),
        // The FIDO Credential Exchange Format (CXF), written from the KeePass export's entries.
        .target(
            name: "CredentialExchange",
            dependencies: ["KeePassFormat", "KeychainModel", .product(name: "Crypto", package: "swift-crypto")]),
        // OpenSSL's PKCS#12 reader decrypts what swift-crypto has no cipher for: the legacy
        // password-based encryption (RC2, RC4, 3DES, DES) of old .p12 files (see
        // docs/keys-and-certificates.md). KeychainPKI still parses the file.
        .target(name: "KeychainPKILegacy", dependencies: ["CLibCrypto"]),
        // OpenSSL's libcrypto for two things swift-crypto has no API for: constant-time modular
        // exponentiation (the Secret Service's dh-ietf1024 sessions) and legacy PKCS#12 decryption.
        .systemLibrary(
            name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),
        .executableTarget(
            name: "keychaind",
            dependencies: [
                "KeychainAgent", "KeychainAgentProtocol", "KeychainCore", "DBusWire", "DBusNIO", "SecretService",
                "KeychainSync", "KeychainLibc", "SSHAgent",
                // KeychainClient: `keychaind --pam` is a client of the user's agent (PAMHandoff.swift).
                "KeychainClient",
                // KeychainTPM: the login keychain sealed to this machine's TPM (loginKeychainSealing).
                "KeychainTPM",
                // KeyringImport: the first login moves GNOME Keyring's login keyring in.
                "KeyringImport",
            ]
        ),
        .testTarget(
            name: "SecretServiceTests",
            dependencies: [
                "SecretService", "KeyringImport", "KeePassFormat", "KeychainAgent", "KeychainCore", "keychaind",
                "SecurityToolMain",
                "SecurityLinuxTool",
                "DBusWire", "DBusNIO",
                "SeededRandom", "KeychainTestSupport", "KeychainLibc",
                "keychain-secitem-worker",
            ],
            exclude: ["Clients"]
        ),
        // KeychainTPM against swtpm, with tpm2-tools as a cross-check.
        .testTarget(
            name: "KeychainTPMTests",
            dependencies: [
                "KeychainTPM", "KeychainCore", "KeychainTestSupport", "KeychainLibc",
                // Security: the test's side of ECIES with a Secure Enclave key held by keychaind.
                "Security",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        // pam_keychain.so in real PAM transactions (libpam-wrapper, pamtester, pam_unix).
        .testTarget(
            name: "PAMKeychainTests",
            dependencies: ["keychaind", "SecurityToolMain", "PAMKeychain", "KeychainTestSupport", "KeychainLibc"]
        ),
        // The Debian package scripts/make-deb builds: dpkg-deb, lintian, dpkg into a throwaway root.
        .testTarget(name: "PackageTests"),
        .testTarget(
            name: "SSHAgentTests",
            dependencies: [
                "SSHAgent", "KeychainCore", "KeychainModel", "KeychainTestSupport",
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        .testTarget(
            name: "KeychainAgentProtocolTests",
            dependencies: ["KeychainAgentProtocol", "KeychainCore", "DBusWire", "SeededRandom"]
        ),
        .testTarget(
            name: "DBusWireTests",
            dependencies: [
                "DBusWire", "DBusNIO", "SeededRandom", "KeychainLibc",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ],
            exclude: ["gdbus_differential.py"]
        ),
        .target(
            name: "KeychainSync",
            dependencies: [
                // NIOSSL: postgres-nio's TLS takes an NIOSSLContext (sslmode=require, verify-ca, verify-full).
                "KeychainCore", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ]
        ),
        // A throw-away swtpm for the TPM tests and benchmark rows, and how scratch daemons are
        // started (posix_spawn with default signal actions).
        .target(name: "ScratchTPM", dependencies: ["KeychainLibc"]),
        .target(
            name: "PostgresScratchServer",
            // CKeychainAgent: posix_spawn's closefrom, so a postmaster started from a process (a
            // test runner) holds none of its descriptors open.
            dependencies: ["CKeychainAgent", "KeychainLibc"]
        ),
        .testTarget(
            name: "KeychainSyncTests",
            dependencies: [
                // SecurityToolMain, SecurityLinuxTool, keychaind: the `security sync` tests run the
                // built executables.
                "KeychainSync", "KeychainCore", "SeededRandom", "SecurityToolMain", "SecurityLinuxTool", "keychaind",
                "PostgresScratchServer", "KeychainLibc",
                .product(name: "PostgresNIO", package: "postgres-nio"), .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "ReliabilityTests",
            dependencies: [
                "keychain-stress", "KeychainCore", "Security", "keychain-test-worker",
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
    ]
)
