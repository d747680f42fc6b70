import Bus
import Contracts
import Foundation
import Testing

@Suite struct AuthContractTests {
    @Test func loginAndValidateRepliesAsTheDocsShowThem() throws {
        let login = try roundTrips(LoginReply.self, Data(#"{"token":"tb1_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","expires_at":"2026-07-01T00:00:00.000Z","user":{"id":1,"username":"alice","name":"Alice Walker","role":"user"}}"#.utf8))
        #expect(login.owner == TokenOwner(userId: 1, role: "user", expiresAt: "2026-07-01T00:00:00.000Z"))
        _ = try roundTrips(TokenOwner.self, Data(#"{"user_id":1,"role":"user","expires_at":"2026-07-01T00:00:00.000Z"}"#.utf8))
        // A reader that does not need the expiry still reads an owner without one.
        #expect(try JSONCoding.decoder.decode(TokenOwner.self, from: Data(#"{"user_id":7,"role":"admin"}"#.utf8)) == TokenOwner(userId: 7, role: "admin"))
        #expect(String(decoding: try JSONCoding.encoder.encode(TokenBody(token: "tb1_x")), as: UTF8.self) == #"{"token":"tb1_x"}"#)
    }

    @Test func theShapeOfASessionToken() {
        let made = SessionToken.text(randomBytes: [UInt8](repeating: 0xFB, count: SessionToken.randomByteCount))
        #expect(made.hasPrefix("tb1_") && made.utf8.count == 47 && SessionToken.length == 47)
        #expect(SessionToken.isWellFormed(made))
        #expect(SessionToken.isWellFormed("tb1_" + String(repeating: "a", count: 42) + "-"))
        #expect(SessionToken.isWellFormed("tb1_" + String(repeating: "Z9_", count: 14) + "q"))
        for bad in ["", "tb1_", "tb1_forged", "tb2_" + String(repeating: "a", count: 43), "tb1_" + String(repeating: "a", count: 44),
                    "tb1_" + String(repeating: "a", count: 42) + "=", "tb1_" + String(repeating: "a", count: 42) + "+",
                    "tb1_" + String(repeating: "a", count: 41) + "é", "TB1_" + String(repeating: "a", count: 43)] {
            #expect(!SessionToken.isWellFormed(bad), "\(bad)")
        }
    }
}

@Suite struct EventStreamContractTests {
    @Test func replayAndSnapshotBodies() throws {
        _ = try roundTrips(ReplayReply.self, Data(#"{"epoch":"6c65cb58-d99d-4f28-afc4-fb23fc8560b6","head":3,"first":1,"trimmed":false,"count":2}"#.utf8))
        // `first` is left out on an empty outbox.
        let empty = String(decoding: try JSONCoding.encoder.encode(ReplayReply(epoch: "e", head: 0, first: nil, trimmed: false, count: 0)), as: UTF8.self)
        #expect(empty == #"{"count":0,"epoch":"e","head":0,"trimmed":false}"#)
        #expect(String(decoding: try JSONCoding.encoder.encode(ReplayRequest(after: 5, limit: 10_000)), as: UTF8.self) == #"{"after":5,"limit":10000}"#)
        #expect(try JSONCoding.decoder.decode(ReplayRequest.self, from: Data(#"{"after":0}"#.utf8)) == ReplayRequest(after: 0))
        #expect(String(decoding: try JSONCoding.encoder.encode(SnapshotRequest(after: nil, limit: 1_000)), as: UTF8.self) == #"{"limit":1000}"#)
        _ = try roundTrips(SnapshotReply.self, Data(#"{"epoch":"e","seq":9,"next":"42","count":1000}"#.utf8))
        _ = try roundTrips(SnapshotReply.self, Data(#"{"epoch":"e","seq":9,"count":3}"#.utf8))
        #expect(Methods.System.replay.name == "sys.replay" && Methods.System.snapshot.name == "sys.snapshot")
        // Default 1000, clamped to 1 … 10 000, never refused.
        #expect(SystemRequests.batch.clamped(nil) == 1_000)
        #expect(SystemRequests.batch.clamped(0) == 1 && SystemRequests.batch.clamped(-5) == 1)
        #expect(SystemRequests.batch.clamped(50_000) == 10_000 && SystemRequests.batch.clamped(7) == 7)
    }
}

@Suite struct PagingContractTests {
    @Test func pageLimitsAreCheckedNotClamped() throws {
        let limit = PageLimit(default: 20, max: 50)
        #expect(try limit.validated(nil) == 20)
        #expect(try limit.validated(1) == 1 && limit.validated(50) == 50)
        for bad in [0, -1, 51, Int.max] {
            #expect(throws: ServiceError.invalid("limit", "must be 1 to 50")) { try limit.validated(bad) }
        }
    }

    @Test func opaqueCursorsRoundTripAndRefuseStrangers() throws {
        for text in ["p42", "f|7", "da|2026-01-01T00:00:00.000Z|9", "é ✓", ""] {
            let cursor = OpaqueCursor.encode(text)
            #expect(!cursor.contains("=") && !cursor.contains("+") && !cursor.contains("/"))
            #expect(try OpaqueCursor.decode(cursor) == text)
        }
        let invalid = ServiceError.invalid("cursor", "not a cursor from this service")
        #expect(throws: invalid) { try OpaqueCursor.decode("***") }
        #expect(throws: invalid) { try OpaqueCursor.decode(OpaqueCursor.encode(String(repeating: "x", count: 100))) }
        #expect(throws: invalid) { try OpaqueCursor.decode(OpaqueCursor.encode("p1"), maxLength: 2) }

        let pages = IDCursor(tag: "p", maxLength: 64, minimum: 0)
        #expect(pages.encode(42) == OpaqueCursor.encode("p42"))
        #expect(try pages.decode(pages.encode(42)) == 42)
        for bad in [OpaqueCursor.encode("p-1"), OpaqueCursor.encode("q42"), OpaqueCursor.encode("p"), OpaqueCursor.encode("p4x")] {
            #expect(throws: invalid) { try pages.decode(bad) }
        }
        let follows = IDCursor(tag: "f|")
        #expect(try follows.decode(OpaqueCursor.encode("f|-3")) == -3)
    }

    /// Base64url as Foundation's base64 with `-` for `+`, `_` for `/` and no padding, for every length and byte.
    @Test func base64URLIsFoundationsBase64WithItsLettersReplaced() {
        var state: UInt64 = 7
        for length in 0..<200 {
            let bytes = (0..<length).map { _ -> UInt8 in
                state = state &* 6364136223846793005 &+ 1442695040888963407
                return UInt8(truncatingIfNeeded: state >> 33)
            }
            let data = Data(bytes)
            let expected = data.base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
            #expect(Base64URL.encode(data) == expected, "\(bytes)")
            #expect(Base64URL.decode(Base64URL.encode(data)) == data)
        }
        #expect(Base64URL.encode(Data([0xFB, 0xFF, 0xBF])) == "-_-_")
    }

    @Test func snapshotKeysAreDecimalIds() throws {
        #expect(try SnapshotKey.id(after: nil) == 0)
        #expect(try SnapshotKey.id(after: "42") == 42)
        for bad in ["", "x", "4.2", "99999999999999999999"] {
            #expect(throws: ServiceError.invalid("after", "not a snapshot key from this service")) { try SnapshotKey.id(after: bad) }
        }
        #expect(SnapshotKey.next(after: [3, 5, 9], limit: 3) == "9")
        #expect(SnapshotKey.next(after: [3, 5], limit: 3) == nil)
        #expect(SnapshotKey.next(after: [], limit: 0) == nil)
    }
}
