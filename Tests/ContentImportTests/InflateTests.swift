import Foundation
import Testing
import TestSupport
@testable import ContentImport

@Suite struct InflateTests {
    @Test func pythonIsPresentInCI() {
        if ZipFixtures.inCI {
            #expect(ZipFixtures.pythonPresent, "CI must have \(ZipFixtures.python): deploy/local/test installs python3")
            if case .failure(let error) = ZipFixtures.made { Issue.record("fixtures: \(error)") }
        }
    }

    /// zlib's raw streams of text, noise, zeros, XML, mixed data, a Fibonacci-skewed alphabet
    /// (15-bit codes), at levels 0, 1 and 9 and with the fixed, RLE, Huffman-only and filtered strategies.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func decodesWhatZlibMakes() throws {
        let manifest = try ZipFixtures.get().manifest
        #expect(manifest.inflate.count >= 30)
        for name in manifest.inflate {
            let raw = try ZipFixtures.bytes("inflate/\(name).raw")
            let stream = try ZipFixtures.bytes("inflate/\(name).deflate")
            let decoded = try Inflate.decompress(stream, maxOutputBytes: raw.count)
            #expect(decoded == raw, "\(name)")
            if !raw.isEmpty {
                #expect(inflateError(stream, limit: raw.count - 1) == .outputLimitExceeded(limit: raw.count - 1), "\(name)")
            }
        }
    }

    /// The Fibonacci data really does make codes longer than the 10-bit table, so the long path is tested.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func fibonacciStreamHasFifteenBitCodes() throws {
        let stream = try ZipFixtures.bytes("inflate/fibonacci-huffman.deflate")
        let longest: Int = try stream.withUnsafeBufferPointer { buffer in
            var decoder = InflateDecoder(input: buffer, maxOutput: 0, sizeHint: 0)
            defer { decoder.output.release() }
            _ = try decoder.take(1) // final or not
            #expect(try decoder.take(2) == 2) // dynamic

            let (literalLength, _) = try decoder.dynamicTables()
            return literalLength.counts.lastIndex { $0 > 0 } ?? 0
        }
        #expect(longest == 15)
    }

    @Test func storedAndFixedBlocksMadeByHand() throws {
        #expect(try Inflate.decompress(BitWriter.storedStream(Array("stored".utf8)), maxOutputBytes: 100) == Array("stored".utf8))
        // Two blocks: a non-final stored one (empty), then a final fixed one with a match.
        var writer = BitWriter()
        writer.bits(0, 1)
        writer.bits(0, 2)
        var stream = writer.finish() + [0, 0, 0xFF, 0xFF]
        writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(1, 2)
        for byte in "ab".utf8 { writer.fixed(Int(byte)) }
        writer.fixed(258) // length 4
        writer.code(1, 5) // distance 2
        writer.fixed(256)
        stream += writer.finish()
        #expect(try Inflate.decompress(stream, maxOutputBytes: 100) == Array("ababab".utf8))
    }

    @Test func malformedStreamsAreRefusedByName() {
        #expect(inflateError([]) == .truncated)
        #expect(inflateError([0b111]) == .badBlockType)
        #expect(inflateError([1, 5, 0, 0xFA, 0xFE, 1, 2, 3, 4, 5]) == .storedLengthMismatch)
        #expect(inflateError([1, 5, 0, 0xFA, 0xFF, 1, 2]) == .truncated)
        #expect(inflateError(BitWriter.storedStream([1, 2]) + [0]) == .trailingBytes(1))

        // A match before any output.
        var writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(1, 2)
        writer.fixed(257)
        writer.code(0, 5)
        #expect(inflateError(writer.finish()) == .distanceTooFar(distance: 1, available: 0))
        // Literal/length 286 and distance 30 exist in the fixed code but mean nothing.
        writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(1, 2)
        writer.fixed(286)
        #expect(inflateError(writer.finish()) == .invalidSymbol(.literalLength))
        writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(1, 2)
        writer.fixed(65)
        writer.fixed(257)
        writer.code(30, 5)
        #expect(inflateError(writer.finish()) == .invalidSymbol(.distance))
    }

    /// A dynamic block header: HLIT, HDIST, HCLEN, then the code length code's lengths (3 bits each).
    func dynamicHeader(literals: Int = 257, distances: Int = 1, codeLengthLengths: [Int]) -> BitWriter {
        var writer = BitWriter()
        writer.bits(1, 1)
        writer.bits(2, 2)
        writer.bits(literals - 257, 5)
        writer.bits(distances - 1, 5)
        writer.bits(codeLengthLengths.count - 4, 4)
        for length in codeLengthLengths { writer.bits(length, 3) }
        return writer
    }

    @Test func badDynamicHeadersAreRefused() {
        // Code length code (order 16, 17, 18, 0, 8, ...): three codes of length 1 are over-subscribed.
        var writer = dynamicHeader(codeLengthLengths: [1, 1, 1, 0])
        #expect(inflateError(writer.finish()) == .overSubscribed(.codeLengths))
        // One code of length 2 leaves three quarters unused.
        writer = dynamicHeader(codeLengthLengths: [0, 0, 0, 2])
        #expect(inflateError(writer.finish()) == .incomplete(.codeLengths))
        // Too many literal/length and distance codes.
        writer = dynamicHeader(literals: 287, codeLengthLengths: [1, 1, 0, 0])
        #expect(inflateError(writer.finish()) == .badCodeLengths("287 literal/length codes, more than 286"))
        writer = dynamicHeader(distances: 31, codeLengthLengths: [1, 1, 0, 0])
        #expect(inflateError(writer.finish()) == .badCodeLengths("31 distance codes, more than 30"))

        // Codes: 16 → "0", 18 → "1" (each one bit, so the code length code is complete).
        writer = dynamicHeader(codeLengthLengths: [1, 0, 1, 0])
        writer.code(0, 1) // 16 first: nothing to repeat
        #expect(inflateError(writer.finish()) == .badCodeLengths("a repeat with no length before it"))
        writer = dynamicHeader(codeLengthLengths: [1, 0, 1, 0])
        for _ in 0..<2 {
            writer.code(1, 1)
            writer.bits(127, 7) // 138 zeros, twice: 276 > 258
        }
        #expect(inflateError(writer.finish()) == .badCodeLengths("a repeat past the last code"))

        // Codes: 18 → "0", 1 → "10", 2 → "11" (order: 16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1).
        let zerosOneTwo = [0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 2]
        // 256 zeros then length 1 for symbol 256 and 1 for the distance: only the end-of-block code, incomplete but single.
        writer = dynamicHeader(codeLengthLengths: zerosOneTwo)
        writer.code(0, 1); writer.bits(127, 7) // 138 zeros
        writer.code(0, 1); writer.bits(107, 7) // 118 zeros: 256 so far
        writer.code(2, 2) // symbol 256: length 1
        writer.code(2, 2) // distance 0: length 1
        writer.code(0, 1) // the end-of-block code
        #expect((try? Inflate.decompress(writer.finish(), maxOutputBytes: 10)) == [])
        // The same without a code for 256: refused.
        writer = dynamicHeader(codeLengthLengths: zerosOneTwo)
        writer.code(0, 1); writer.bits(127, 7)
        writer.code(0, 1); writer.bits(108, 7) // 257 zeros
        writer.code(2, 2)
        #expect(inflateError(writer.finish()) == .badCodeLengths("no code for the end of the block"))
        // Three literal/length codes of length 1: over-subscribed.
        writer = dynamicHeader(literals: 258, codeLengthLengths: zerosOneTwo)
        writer.code(0, 1); writer.bits(127, 7)
        writer.code(0, 1); writer.bits(106, 7) // 255 zeros
        writer.code(2, 2); writer.code(2, 2); writer.code(2, 2) // 255, 256, 257: length 1
        writer.code(2, 2) // the distance
        #expect(inflateError(writer.finish()) == .overSubscribed(.literalLength))
        // Literal/length codes of lengths 1 and 2 only: incomplete.
        writer = dynamicHeader(codeLengthLengths: zerosOneTwo)
        writer.code(0, 1); writer.bits(127, 7)
        writer.code(0, 1); writer.bits(106, 7) // 255 zeros
        writer.code(3, 2); writer.code(2, 2) // 255: 2, 256: 1
        writer.code(2, 2)
        #expect(inflateError(writer.finish()) == .incomplete(.literalLength))
        // The single one-bit code's other bit pattern means nothing.
        writer = dynamicHeader(codeLengthLengths: zerosOneTwo)
        writer.code(0, 1); writer.bits(127, 7)
        writer.code(0, 1); writer.bits(107, 7)
        writer.code(2, 2)
        writer.code(2, 2)
        writer.code(1, 1) // not the end-of-block code
        #expect(inflateError(writer.finish()) == .invalidSymbol(.literalLength))
    }

    /// Every strict prefix of a valid stream is truncated, never misread.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func everyPrefixIsTruncated() throws {
        for name in ["text-fixed", "xml-level9", "one-stored", "fibonacci-huffman"] {
            let stream = try ZipFixtures.bytes("inflate/\(name).deflate")
            let step = max(1, stream.count / 300)
            for length in stride(from: 0, to: stream.count, by: step) {
                #expect(inflateError(Array(stream[..<length])) == .truncated, "\(name) cut at \(length)")
            }
        }
    }

    /// 10 kB that would make 15 MB stops at the limit without writing past it.
    @Test func bombStopsAtTheOutputLimit() throws {
        let bomb = BitWriter.bomb(matches: 60_000)
        #expect(bomb.count < 100_000)
        #expect(inflateError(bomb, limit: 1 << 20) == .outputLimitExceeded(limit: 1 << 20))
        let small = BitWriter.bomb(matches: 4)
        #expect(try Inflate.decompress(small, maxOutputBytes: 1 + 4 * 258) == [UInt8](repeating: 65, count: 1 + 4 * 258))
    }

    /// Random mutations of valid streams: never a crash or output past the limit.
    @Test(.enabled(if: ZipFixtures.pythonPresent)) func mutatedStreamsFailCleanly() throws {
        var random = SplitMix64(seed: 15)
        let seeds = try ["text-level9", "xml-fixed", "fibonacci-huffman", "mixed-level1"].map { name in
            Array(try ZipFixtures.bytes("inflate/\(name).deflate").prefix(4_000))
        }
        var outcomes: [String: Int] = [:]
        for round in 0..<1_500 {
            var stream = seeds[round % seeds.count]
            for _ in 0..<Int.random(in: 1...4, using: &random) {
                stream[Int.random(in: 0..<stream.count, using: &random)] ^= UInt8.random(in: 1...255, using: &random)
            }
            do {
                let output = try Inflate.decompress(stream, maxOutputBytes: 200_000)
                #expect(output.count <= 200_000)
                outcomes["decoded", default: 0] += 1
            } catch {
                outcomes["\(error)".prefix(20).description, default: 0] += 1
            }
        }
        #expect(outcomes.count >= 4, "\(outcomes)")
    }

    @Test func crc32MatchesTheCheckValue() {
        #expect(CRC32.checksum(Array("123456789".utf8)) == 0xCBF4_3926)
        #expect(CRC32.checksum([UInt8]()) == 0)
        let data = (0..<1_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }
        var pieces = CRC32()
        pieces.update(data[..<3])
        pieces.update(data[3..<500])
        pieces.update(data[500...])
        #expect(pieces.value == CRC32.checksum(data))
    }
}
