// The engine speaks the model's vocabulary: its own users (the agent, sync, the engine's tests) see
// `Item`, `KeychainError` and `KeychainHandle` with it. The API products import `KeychainModel`
// and `KeychainClient`, never this module (issue 51).
@_exported import KeychainModel
