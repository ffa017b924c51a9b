import Foundation
import LocalAuthentication
import Security

// An app that authenticates its user with LocalAuthentication, as Apple's sample code does
// ("Logging a User into Your App with Face ID or Touch ID"), and keeps a secret only its user
// may read, for LocalAuthenticationTests:
//   keychain-la-worker evaluate [--not-interactive] [--biometrics|--companion|--either]   prints
//       "success" or "error CODE"; --biometrics evaluates .deviceOwnerAuthenticationWithBiometrics,
//       and prints "state HEX" after a success (evaluatedPolicyDomainState); --companion
//       .deviceOwnerAuthenticationWithCompanion, --either …WithBiometricsOrCompanion
//   keychain-la-worker biometry   canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics):
//       prints "yes" or "no CODE", then "type N" (biometryType), "evaluated HEX|none"
//       (evaluatedPolicyDomainState) and "domain HEX|none" (domainState.biometry.stateHash)
//   keychain-la-worker companion   canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion):
//       prints "yes" or "no CODE", then "domain HEX|none" (domainState.companion.stateHash)
//   keychain-la-worker can POLICY                       prints "yes" or "no CODE"
//   keychain-la-worker store SERVICE FILE [FLAGS]       stores FILE's bytes as a password whose
//       access control asks for user presence (or FLAGS, SecAccessControlCreateFlags' raw value);
//       prints "stored" or "error OSSTATUS"
//   keychain-la-worker read SERVICE [fail|skip|not-interactive]   SecItemCopyMatching for its
//       data, as asked; prints "secret TEXT" or "error OSSTATUS"
//   keychain-la-worker relabel SERVICE   SecItemUpdate of its label; prints "relabelled" or
//       "error OSSTATUS"
//   keychain-la-worker rebind SERVICE FLAGS   SecItemUpdate of its access control, to one of FLAGS;
//       prints "rebound" or "error OSSTATUS"
//   keychain-la-worker evaluate-and-read SERVICES N [--biometrics|--companion]   evaluates the
//       context (with the policy evaluate's options choose), then reads each of SERVICES
//       (comma-separated) N times with it as kSecUseAuthenticationContext, then the first once
//       without it (with kSecUseAuthenticationUIFail after a finger or a key, which would wait
//       otherwise)
//   keychain-la-worker evaluate-access-control FLAGS OPERATION [SERVICE]   evaluateAccessControl of
//       an access control of FLAGS (SecAccessControlCreateFlags' raw value) for OPERATION
//       (LAAccessControlOperation's); prints "success" or "error CODE", then, given SERVICE,
//       reads it with the context as kSecUseAuthenticationContext ("secret TEXT" or "error OSSTATUS")
//   keychain-la-worker key-create TAG FLAGS   a permanent Secure Enclave key, its access control of
//       FLAGS and .privateKeyUsage; prints "created" or "error CODE"
//   keychain-la-worker key-sign TAG [N] [--companion|…]   finds it ("found", or "error
//       OSSTATUS"), signs a message with it N times and verifies each signature: "signed", or
//       "error CODE"; with a policy option (as evaluate's), evaluates it first ("success" or
//       "error CODE") and finds the key with the context as kSecUseAuthenticationContext
//   keychain-la-worker simplekeychain … | keychainaccess …   the calls SimpleKeychain and
//       KeychainAccess make for an item that asks for user presence (LibraryPaths.swift)
//   keychain-la-worker right-save|right-use|right-remove …   LARightStore (Rights.swift)
//   keychain-la-worker environment | environment-watch SECONDS   LAEnvironment (Rights.swift)
//   keychain-la-worker apple-sample add SERVER USER FILE | read SERVER | login | token-store FILE |
//       token-fetch   Apple's sample code (AppleSamples.swift): prints "added", "credentials USER
//       PASSWORD", "logged in", "stored", "token TEXT", or the error
let arguments = CommandLine.arguments.dropFirst()
let context = LAContext()
/// The policy the arguments choose: --biometrics, --companion, --either (biometry or companion),
/// else .deviceOwnerAuthentication.
func chosenPolicy(_ arguments: some Collection<String>) -> LAPolicy {
    if arguments.contains("--biometrics") { return .deviceOwnerAuthenticationWithBiometrics }
    if arguments.contains("--companion") { return .deviceOwnerAuthenticationWithCompanion }
    if arguments.contains("--either") { return .deviceOwnerAuthenticationWithBiometricsOrCompanion }
    return .deviceOwnerAuthentication
}

switch arguments.first {
case "can":
    let policy = LAPolicy(rawValue: Int(arguments.dropFirst().first ?? "") ?? 2) ?? .deviceOwnerAuthentication
    var error: NSError?
    if context.canEvaluatePolicy(policy, error: &error) {
        print("yes")
    } else {
        print("no \(error?.code ?? 0)")
    }
case "biometry":
    var error: NSError?
    let can = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithBiometrics, error: &error)
    print(can ? "yes" : "no \(error?.code ?? 0)")
    print("type \(context.biometryType.rawValue)")
    let hex = { (data: Data?) in data.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "none" }
    print("evaluated \(hex(context.evaluatedPolicyDomainState))")
    print("domain \(hex(context.domainState.biometry.stateHash))")
case "companion":
    var error: NSError?
    let can = context.canEvaluatePolicy(.deviceOwnerAuthenticationWithCompanion, error: &error)
    print(can ? "yes" : "no \(error?.code ?? 0)")
    let hash = context.domainState.companion.stateHash
    print("domain \(hash.map { $0.map { String(format: "%02x", $0) }.joined() } ?? "none")")
case "evaluate":
    context.interactionNotAllowed = arguments.contains("--not-interactive")
    let policy = chosenPolicy(arguments)
    let done = DispatchSemaphore(value: 0)
    context.evaluatePolicy(policy, localizedReason: "Log in to your account") { success, error in
        if success {
            print("success")
            if let state = context.evaluatedPolicyDomainState {
                print("state \(state.map { String(format: "%02x", $0) }.joined())")
            }
        } else {
            print("error \((error as? LAError)?.code.rawValue ?? 0)")
            FileHandle.standardError.write(Data("\(error.map { "\($0)" } ?? "")\n".utf8))
        }
        done.signal()
    }
    done.wait()
case "store":
    let values = Array(arguments.dropFirst())
    guard values.count >= 2, let secret = FileManager.default.contents(atPath: values[1]) else { exit(2) }
    let flags = values.count > 2 ? SecAccessControlCreateFlags(rawValue: UInt(values[2]) ?? 0) : .userPresence
    var error: Unmanaged<CFError>?
    guard let control = SecAccessControlCreateWithFlags(nil, kSecAttrAccessibleWhenUnlocked, flags, &error)
    else { exit(2) }
    let status = SecItemAdd(
        [
            kSecClass: kSecClassGenericPassword, kSecAttrService: values[0], kSecAttrAccount: "owner",
            kSecAttrAccessControl: control, kSecValueData: secret,
        ] as CFDictionary, nil)
    print(status == errSecSuccess ? "stored" : "error \(status)")
case "evaluate-access-control":
    let values = Array(arguments.dropFirst())
    guard values.count >= 2, let flags = UInt(values[0]), let raw = Int(values[1]),
        let operation = LAAccessControlOperation(rawValue: raw)
    else { exit(2) }
    var error: Unmanaged<CFError>?
    guard
        let control = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlocked, SecAccessControlCreateFlags(rawValue: flags), &error)
    else {
        print("error creating the access control")
        exit(1)
    }
    do {
        try await context.evaluateAccessControl(control, operation: operation, localizedReason: "Use your key")
        print("success")
    } catch {
        print("error \((error as? LAError)?.code.rawValue ?? 0)")
    }
    if values.count == 3 {
        var result: CFTypeRef?
        let status = SecItemCopyMatching(
            [
                kSecClass: kSecClassGenericPassword, kSecAttrService: values[2], kSecReturnData: true,
                kSecUseAuthenticationContext: context,
            ] as CFDictionary, &result)
        print(
            status == errSecSuccess
                ? "secret \(String(decoding: result as? Data ?? Data(), as: UTF8.self))" : "error \(status)")
    }
case "evaluate-and-read":
    let values = Array(arguments.dropFirst())
    guard values.count >= 2, let count = Int(values[1]) else { exit(2) }
    let policy = chosenPolicy(values)
    // A read without the context would wait for a finger or a key: it is made with Fail.
    let biometrics = policy != .deviceOwnerAuthentication
    let services = values[0].split(separator: ",").map(String.init)
    let done = DispatchSemaphore(value: 0)
    context.evaluatePolicy(policy, localizedReason: "Open your vault") { success, error in
        print(success ? "success" : "error \((error as? LAError)?.code.rawValue ?? 0)")
        done.signal()
    }
    done.wait()
    func read(_ service: String, with context: LAContext?) {
        var query: [CFString: Any] = [
            kSecClass: kSecClassGenericPassword, kSecAttrService: service, kSecReturnData: true,
        ]
        if let context { query[kSecUseAuthenticationContext] = context }
        if context == nil && biometrics { query[kSecUseAuthenticationUI] = kSecUseAuthenticationUIFail }
        var result: CFTypeRef?
        let status = SecItemCopyMatching(query as CFDictionary, &result)
        print(
            status == errSecSuccess
                ? "secret \(String(decoding: result as? Data ?? Data(), as: UTF8.self))" : "error \(status)")
    }
    for service in services {
        for _ in 0..<count { read(service, with: context) }
    }
    print("without the context")
    read(services[0], with: nil)
case "key-create":
    // A Secure Enclave key kept in the keychain, its access control of FLAGS (with
    // .privateKeyUsage), as Apple's "Protecting keys with the Secure Enclave" makes one.
    let values = Array(arguments.dropFirst())
    guard values.count == 2, let flags = UInt(values[1]),
        let access = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlockedThisDeviceOnly,
            SecAccessControlCreateFlags(rawValue: flags).union(.privateKeyUsage), nil)
    else { exit(2) }
    let attributes: NSDictionary = [
        kSecAttrKeyType: kSecAttrKeyTypeEC, kSecAttrKeySizeInBits: 256, kSecAttrTokenID: kSecAttrTokenIDSecureEnclave,
        kSecPrivateKeyAttrs: [
            kSecAttrIsPermanent: true, kSecAttrApplicationTag: Data(values[0].utf8), kSecAttrAccessControl: access,
        ],
    ]
    var error: Unmanaged<CFError>?
    if SecKeyCreateRandomKey(attributes, &error) != nil {
        print("created")
    } else {
        print("error \((error?.takeRetainedValue() as Error?).map { ($0 as NSError).code } ?? 0)")
    }
case "key-sign":
    // Finds the key (which asks nothing), then signs with it N times (1 by default) and checks
    // each signature; with a policy option, the context is evaluated first and the key found
    // with it (kSecUseAuthenticationContext), as Apple's sample code does.
    let values = Array(arguments.dropFirst())
    var query: [CFString: Any] = [
        kSecClass: kSecClassKey, kSecAttrApplicationTag: Data((values.first ?? "").utf8),
        kSecAttrKeyType: kSecAttrKeyTypeEC, kSecReturnRef: true,
    ]
    if values.contains(where: { $0.hasPrefix("--") }) {
        let done = DispatchSemaphore(value: 0)
        context.evaluatePolicy(chosenPolicy(values), localizedReason: "Sign in") { success, error in
            print(success ? "success" : "error \((error as? LAError)?.code.rawValue ?? 0)")
            done.signal()
        }
        done.wait()
        query[kSecUseAuthenticationContext] = context
    }
    var found: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &found)
    guard status == errSecSuccess, let found else {
        print("error \(status)")
        exit(0)
    }
    let key = found as! SecKey
    print("found")
    let message = Data("a message to sign".utf8)
    for _ in 0..<(values.count > 1 ? Int(values[1]) ?? 1 : 1) {
        var error: Unmanaged<CFError>?
        guard let signature = SecKeyCreateSignature(key, .ecdsaSignatureMessageX962SHA256, message as CFData, &error)
        else {
            print("error \((error?.takeRetainedValue() as Error?).map { ($0 as NSError).code } ?? 0)")
            continue
        }
        let verified = SecKeyVerifySignature(
            SecKeyCopyPublicKey(key)!, .ecdsaSignatureMessageX962SHA256, message as CFData, signature, nil)
        print(verified ? "signed" : "bad signature")
    }
case "apple-sample":
    let values = Array(arguments.dropFirst())
    do {
        switch values.first {
        case "add":
            guard values.count == 4, let password = FileManager.default.contents(atPath: values[3]) else { exit(2) }
            try addCredentials(
                Credentials(username: values[2], password: String(decoding: password, as: UTF8.self)), server: values[1]
            )
            print("added")
        case "token-store":
            guard values.count == 2, let token = FileManager.default.contents(atPath: values[1]) else { exit(2) }
            try await storeBackendAccessToken(token)
            print("stored")
        case "token-fetch":
            print("token \(String(decoding: try await fetchBackendAccessToken(), as: UTF8.self))")
        case "read":
            let credentials = try readCredentials(server: values.dropFirst().first ?? "")
            print("credentials \(credentials.username) \(credentials.password)")
        case "login":
            // The sample is an app's: its button runs on the main actor, here the main queue.
            Task { @MainActor in
                let controller = LoginViewController()
                controller.tapButton {
                    print(controller.state == .loggedin ? "logged in" : "logged out")
                    exit(0)
                }
            }
            dispatchMain()
        default: exit(2)
        }
    } catch {
        print("error \(error)")
    }
case "simplekeychain": simpleKeychain(Array(arguments.dropFirst()))
case "keychainaccess": keychainAccess(Array(arguments.dropFirst()))
case "environment": print(describe(LAEnvironment.currentUser.state))
case "environment-watch": watchEnvironment(Int(arguments.dropFirst().first ?? "") ?? 30)
case "right-save": await saveRight(Array(arguments.dropFirst()))
case "right-use": await useRight(arguments.dropFirst().first ?? "")
case "right-remove": await removeRight(arguments.dropFirst().first ?? "")
case "relabel":
    let status = SecItemUpdate(
        [kSecClass: kSecClassGenericPassword, kSecAttrService: arguments.dropFirst().first ?? ""] as CFDictionary,
        [kSecAttrLabel: "relabelled"] as CFDictionary)
    print(status == errSecSuccess ? "relabelled" : "error \(status)")
case "rebind":
    let values = Array(arguments.dropFirst())
    var error: Unmanaged<CFError>?
    guard values.count == 2, let flags = UInt(values[1]),
        let control = SecAccessControlCreateWithFlags(
            nil, kSecAttrAccessibleWhenUnlocked, SecAccessControlCreateFlags(rawValue: flags), &error)
    else { exit(2) }
    let status = SecItemUpdate(
        [kSecClass: kSecClassGenericPassword, kSecAttrService: values[0]] as CFDictionary,
        [kSecAttrAccessControl: control] as CFDictionary)
    print(status == errSecSuccess ? "rebound" : "error \(status)")
case "read":
    let values = Array(arguments.dropFirst())
    var query: [CFString: Any] = [
        kSecClass: kSecClassGenericPassword, kSecAttrService: values.first ?? "", kSecReturnData: true,
    ]
    switch values.dropFirst().first {
    case "fail": query[kSecUseAuthenticationUI] = kSecUseAuthenticationUIFail
    case "skip": query[kSecUseAuthenticationUI] = kSecUseAuthenticationUISkip
    case "not-interactive":
        context.interactionNotAllowed = true
        query[kSecUseAuthenticationContext] = context
    default: break
    }
    var result: CFTypeRef?
    let status = SecItemCopyMatching(query as CFDictionary, &result)
    if status == errSecSuccess, let data = result as? Data {
        print("secret \(String(decoding: data, as: UTF8.self))")
    } else {
        print("error \(status)")
    }
default:
    FileHandle.standardError.write(Data("usage: keychain-la-worker evaluate|can|store|read\n".utf8))
    exit(2)
}
