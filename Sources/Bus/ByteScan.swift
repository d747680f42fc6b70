/// Finds the bytes that end a plain run of a JSON string eight at a time (SWAR: one 64-bit
/// word's bytes tested together), where a byte-by-byte loop costs a compare and a branch per
/// byte. Replies carry kilobytes of place names and addresses, and the gateway checks each one.
enum ByteScan {
    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highs: UInt64 = 0x8080_8080_8080_8080

    /// A byte of `word` is below `limit` (at most 128), or its high bit is set. Never misses
    /// one; may report one falsely past a byte that is (the caller then looks byte by byte).
    @inline(__always)
    private static func anyBelow(_ word: UInt64, _ limit: UInt64) -> Bool {
        (word &- ones &* limit) & ~word & highs != 0
    }

    /// A byte of `word` equals `byte`, as `anyBelow(word ^ byte…, 1)`.
    @inline(__always)
    private static func any(_ word: UInt64, _ byte: UInt8) -> Bool {
        anyBelow(word ^ (ones &* UInt64(byte)), 1)
    }

    /// The first index from `start` (before `end`) that is not printable ASCII other than `"`
    /// and `\`, or the index where the words ran out: the caller goes on byte by byte from
    /// there. Only whole words are looked at.
    @inline(__always)
    static func skipPlain(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        skipWords(bytes, from: start, to: end) { word in
            word & highs == 0 && !anyBelow(word, 0x20) && !any(word, UInt8(ascii: "\"")) && !any(word, UInt8(ascii: "\\"))
        }
    }

    /// The first index from `start` (before `end`) that may be `"` or `\`, as `skipPlain` does
    /// for any byte: the caller goes on byte by byte from there.
    @inline(__always)
    static func skipToQuoteOrEscape(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int) -> Int {
        skipWords(bytes, from: start, to: end) { word in !any(word, UInt8(ascii: "\"")) && !any(word, UInt8(ascii: "\\")) }
    }

    /// Steps over whole words while `plain` says so; the index of the first word it refused, or
    /// where fewer than eight bytes are left.
    @inline(__always)
    private static func skipWords(_ bytes: UnsafeRawBufferPointer, from start: Int, to end: Int, while plain: (UInt64) -> Bool) -> Int {
        guard let base = bytes.baseAddress else { return start }
        var i = start
        while i + 8 <= end, plain(base.loadUnaligned(fromByteOffset: i, as: UInt64.self)) { i += 8 }
        return i
    }
}
