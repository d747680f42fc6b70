import Bus
@testable import Contracts
import Foundation
import Testing

/// A push's two frames, and what a gateway refuses of them.
@Suite struct PushTests {
    static func frames(_ envelope: String, topic: String = "notify.alert") -> [Data] { [Data("push.\(topic)".utf8), Data(envelope.utf8)] }

    @Test func framesReadBackAsWritten() throws {
        let push = Push(topic: "notify.alert", id: "a-1", userId: 12, coalesce: "pos", body: Data(#"{"x":[1,{"y":"é\n"}]}"#.utf8))
        #expect(String(decoding: push.frames[0], as: UTF8.self) == "push.notify.alert")
        #expect(String(decoding: push.frames[1], as: UTF8.self)
                == #"{"v":1,"id":"a-1","topic":"notify.alert","user_id":12,"coalesce":"pos","origin":null,"body":{"x":[1,{"y":"é\n"}]}}"#)
        #expect(try Push.read(push.frames) == push)
        var plain = push
        plain.coalesce = nil
        #expect(try Push.read(plain.frames) == plain)
        var fromDevice = plain
        fromDevice.origin = "k2x/17"
        #expect(String(decoding: fromDevice.frames[1], as: UTF8.self).contains(#""origin":"k2x/17""#))
        #expect(try Push.read(fromDevice.frames) == fromDevice)
        // An origin that would not read back is written as none: the push still goes.
        for odd in [#"gw/"1"#, #"gw\1"#, String(repeating: "o", count: 129)] {
            fromDevice.origin = odd
            #expect(try Push.read(fromDevice.frames).origin == nil, "\(odd)")
        }
    }

    @Test func whatBreaksTheContractIsRefused() {
        let good = #"{"v":1,"id":"a","topic":"notify.alert","user_id":3,"coalesce":null,"body":{}}"#
        #expect((try? Push.read(PushTests.frames(good))) != nil)
        let bad: [(String, [Data])] = [
            ("one frame", [Data("push.notify.alert".utf8)]),
            ("v 2", PushTests.frames(good.replacingOccurrences(of: #""v":1"#, with: #""v":2"#))),
            ("topic differs from the frame", PushTests.frames(good, topic: "notify.other")),
            ("bad topic", PushTests.frames(good.replacingOccurrences(of: "notify.alert", with: "Notify")), ),
            ("user 0", PushTests.frames(good.replacingOccurrences(of: #""user_id":3"#, with: #""user_id":0"#))),
            ("user a string", PushTests.frames(good.replacingOccurrences(of: #""user_id":3"#, with: #""user_id":"3""#))),
            ("body an array", PushTests.frames(good.replacingOccurrences(of: #""body":{}"#, with: #""body":[]"#))),
            ("no body", PushTests.frames(good.replacingOccurrences(of: #","body":{}"#, with: ""))),
            ("id too long", PushTests.frames(good.replacingOccurrences(of: #""id":"a""#, with: #""id":"\#(String(repeating: "i", count: 129))""#))),
            ("coalesce a number", PushTests.frames(good.replacingOccurrences(of: #""coalesce":null"#, with: #""coalesce":5"#))),
            ("origin too long", PushTests.frames(good.replacingOccurrences(of: #""coalesce":null"#, with: #""origin":"\#(String(repeating: "o", count: 129))""#))),
            ("not JSON", PushTests.frames(good + "x")),
            ("a line break", PushTests.frames(good.replacingOccurrences(of: #""body":{}"#, with: "\"body\":{\n}"))),
            ("too deep", PushTests.frames(good.replacingOccurrences(of: #""body":{}"#, with: #""body":\#(String(repeating: "[", count: 40))\#(String(repeating: "]", count: 40))"#))),
            ("too long", PushTests.frames(good.replacingOccurrences(of: #""body":{}"#, with: #""body":{"p":"\#(String(repeating: "x", count: Push.maxEnvelopeBytes))"}"#))),
        ]
        for (what, frames) in bad {
            #expect(throws: Push.Refusal.self, "\(what)") { try Push.read(frames) }
        }
    }

    @Test func topicsAreShortLowerCaseNames() {
        for ok in ["notify.alert", "a", "chat.group-7_x", String(repeating: "a", count: 64)] { #expect(Push.isValidTopic(ok), "\(ok)") }
        for no in ["", "Notify", "7up", ".a", "a b", "a*", "é", String(repeating: "a", count: 65)] { #expect(!Push.isValidTopic(no), "\(no)") }
    }
}
