// swift-tools-version:6.1
import PackageDescription

let package = Package(
    name: "keychain-linux",
    platforms: [.macOS(.v15)],
    products: [
        .library(name: "KeychainCore", targets: ["KeychainCore"]),
        .library(name: "Security", targets: ["Security"]),
    ],
    dependencies: [
        .package(url: "https://github.com/groue/GRDB.swift", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
    ],
    targets: [
        .target(
            name: "KeychainCore",
            dependencies: [
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ]
        ),
        .target(
            name: "Security",
            dependencies: []
        ),
        .executableTarget(
            name: "keychain-test-worker",
            dependencies: ["KeychainCore"],
            path: "Tests/Worker"
        ),
        .testTarget(
            name: "KeychainCoreTests",
            dependencies: [
                "KeychainCore", "keychain-test-worker",
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .testTarget(
            name: "SecurityTests",
            dependencies: ["Security"]
        ),
    ]
)
