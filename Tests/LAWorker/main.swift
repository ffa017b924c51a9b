import Foundation
import LocalAuthentication

// An app that authenticates its user with LocalAuthentication, as Apple's sample code does
// ("Logging a User into Your App with Face ID or Touch ID"), for LocalAuthenticationTests:
//   keychain-la-worker evaluate [--not-interactive]   prints "success" or "error CODE"
//   keychain-la-worker can POLICY                       prints "yes" or "no CODE"
let arguments = CommandLine.arguments.dropFirst()
let context = LAContext()
switch arguments.first {
case "can":
    let policy = LAPolicy(rawValue: Int(arguments.dropFirst().first ?? "") ?? 2) ?? .deviceOwnerAuthentication
    var error: NSError?
    if context.canEvaluatePolicy(policy, error: &error) {
        print("yes")
    } else {
        print("no \(error?.code ?? 0)")
    }
case "evaluate":
    context.interactionNotAllowed = arguments.contains("--not-interactive")
    let done = DispatchSemaphore(value: 0)
    context.evaluatePolicy(.deviceOwnerAuthentication, localizedReason: "Log in to your account") { success, error in
        if success {
            print("success")
        } else {
            print("error \((error as? LAError)?.code.rawValue ?? 0)")
            FileHandle.standardError.write(Data("\(error.map { "\($0)" } ?? "")\n".utf8))
        }
        done.signal()
    }
    done.wait()
default:
    FileHandle.standardError.write(Data("usage: keychain-la-worker evaluate|can\n".utf8))
    exit(2)
}
