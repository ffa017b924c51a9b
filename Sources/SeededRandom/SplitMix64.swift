/// A small, fast, seedable random number generator: SplitMix64 (Steele, Lea and Flood, 2014).
///
/// The benchmark, the stress suite and the randomized tests draw their inputs from it, so that
/// the same seed gives the same inputs on every run and every machine: a failure is reported
/// with the seed that reproduces it. It is not a cryptographic generator; nothing secret comes
/// from it.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let index = Int.random(in: 0..<10, using: &random)
/// ```
package struct SplitMix64: RandomNumberGenerator, Sendable {
    /// The generator's whole state: the next value is a function of it alone.
    private var state: UInt64

    /// A generator whose sequence is determined by `seed`.
    package init(seed: UInt64) { state = seed }

    /// The next value of the sequence.
    package mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
