/// The CRC-32 of zip, gzip and PNG (ISO-HDLC: reflected polynomial 0xEDB88320, initial value and
/// final XOR all ones), computed eight bytes at a step from eight tables ("slicing by 8").
public struct CRC32: Sendable {
    /// The checksum of the bytes given so far.
    public private(set) var value: UInt32 = 0

    public init() {}

    /// The checksum of `bytes`.
    public static func checksum(_ bytes: some Sequence<UInt8>) -> UInt32 {
        var crc = CRC32()
        crc.update(bytes)
        return crc.value
    }

    /// Adds `bytes` to the checksum.
    public mutating func update(_ bytes: some Sequence<UInt8>) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update($0) }
        if done == nil {
            let copy = Array(bytes)
            copy.withUnsafeBufferPointer { update($0) }
        }
    }

    /// Adds the bytes of `buffer` to the checksum.
    public mutating func update(_ buffer: UnsafeBufferPointer<UInt8>) {
        let tables = CRC32.tables
        var crc = ~value
        var index = 0
        tables.withUnsafeBufferPointer { table in
            while buffer.count - index >= 8 {
                let low =
                    crc
                    ^ (UInt32(buffer[index]) | UInt32(buffer[index + 1]) << 8
                        | UInt32(buffer[index + 2]) << 16 | UInt32(buffer[index + 3]) << 24)
                crc =
                    table[7 * 256 + Int(low & 0xFF)] ^ table[6 * 256 + Int(low >> 8 & 0xFF)]
                    ^ table[5 * 256 + Int(low >> 16 & 0xFF)] ^ table[4 * 256 + Int(low >> 24)]
                    ^ table[3 * 256 + Int(buffer[index + 4])] ^ table[2 * 256 + Int(buffer[index + 5])]
                    ^ table[256 + Int(buffer[index + 6])] ^ table[Int(buffer[index + 7])]
                index += 8
            }
            while index < buffer.count {
                crc = table[Int((crc ^ UInt32(buffer[index])) & 0xFF)] ^ crc >> 8
                index += 1
            }
        }
        value = ~crc
    }

    /// Table k gives the CRC of a byte followed by k zero bytes.
    static let tables: [UInt32] = {
        var tables = [UInt32](repeating: 0, count: 8 * 256)
        for byte in 0..<256 {
            var crc = UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? 0xEDB8_8320 ^ crc >> 1 : crc >> 1 }
            tables[byte] = crc
        }
        for byte in 0..<256 {
            for k in 1..<8 {
                let previous = tables[(k - 1) * 256 + byte]
                tables[k * 256 + byte] = tables[Int(previous & 0xFF)] ^ previous >> 8
            }
        }
        return tables
    }()
}
