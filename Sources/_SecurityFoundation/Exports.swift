// Foundation, as the `Security` module's public interface sees it.
//
// `Security` is built with library evolution so that its clients load only its public imports
// (a module built without it makes them load its internal imports too, and with them GRDB's and
// OpenSSL's clang modules, which a package's other targets are not given: issue 50, item 19).
// A resilient module that imports Foundation (never resilient on Linux) directly is warned, at
// each import, that its binary compatibility cannot be guaranteed; no binary of it is ever
// distributed, so that promise is not one this package makes. This module is the one place
// that import happens: `Security` imports it, and Foundation through it.
@_exported public import Foundation
