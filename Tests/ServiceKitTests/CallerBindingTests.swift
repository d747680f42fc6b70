import Bus
import Contracts
import Foundation
@testable import ServiceKit
import Testing

/// A handler bound to a user or admin method gets the caller resolved from the envelope's
/// `auth`, once, in ServiceKit; a state that admits callers checks them first.
@Suite struct CallerBindingTests {
    final class Admitting: AdmitsCallers, Sendable {
        let refused: Int64
        init(refusing refused: Int64) { self.refused = refused }
        func admit(_ caller: Caller) throws -> Caller {
            guard caller.id != refused else { throw ServiceError(.unauthenticated, "erased") }
            return Caller(id: caller.id, role: .user, origin: caller.origin)
        }
    }

    static let userMethod = Method<Empty, Who>("toy.mine", .runtime, .user, .read, "the caller's own")
    static let adminMethod = Method<Empty, Who>("toy.admin", .runtime, .admin, .write, "an admin's")
    static let openMethod = Method<Empty, Who>("toy.open", .runtime, .anyone, .read, "anyone's")

    struct Who: Codable, Sendable, Equatable {
        var id: Int64
        var role: String
        var origin: String?
    }

    /// Runs `method`'s handler of `table` on a request with `auth` (its envelope a plain `{}` body).
    static func call<State>(_ table: HandlerTable<State>, _ method: some DeclaresMethod, auth: Auth?, state: State) -> Result<Who, ServiceError> {
        let envelope = Data(#"{"v":1,"id":"1","type":"\#(method.name)","body":{}}"#.utf8)
        let context = RequestContext(id: "1", type: method.name, auth: auth, deadline: monotonicNanos() + 1_000_000_000, envelope: envelope, bodyRange: nil)
        do {
            let response = try #require(table.routes[method.name]).run(context, state)
            return .success(try JSONDecoder().decode(Who.self, from: response.body))
        } catch let error as ServiceError {
            return .failure(error)
        } catch {
            return .failure(ServiceError(.internal, "\(error)"))
        }
    }

    static func table<State>(_: State.Type) -> HandlerTable<State> {
        var table = HandlerTable<State>()
        for method in [userMethod, adminMethod] {
            table.on(method) { (_: Empty, caller: Caller, _, _) in Who(id: caller.id, role: caller.role.rawValue, origin: caller.origin) }
        }
        table.on(openMethod) { (_: Empty, context, _) in
            let caller = try Caller.optional(context)
            return Who(id: caller?.id ?? 0, role: caller?.role.rawValue ?? "none", origin: nil)
        }
        return table
    }

    @Test func aUserMethodGetsItsCallerFromAuth() {
        let table = CallerBindingTests.table(Int.self)
        #expect(CallerBindingTests.call(table, CallerBindingTests.userMethod, auth: Auth(userId: "42", role: "user", origin: "g/7"), state: 0)
            == .success(Who(id: 42, role: "user", origin: "g/7")))
        #expect(table.descriptions.contains { $0.type == "toy.mine" && $0.description == "the caller's own" })
    }

    @Test func aMissingOrMalformedCallerIsUnauthenticated() {
        let table = CallerBindingTests.table(Int.self)
        let method = CallerBindingTests.userMethod
        #expect(CallerBindingTests.call(table, method, auth: nil, state: 0) == .failure(ServiceError(.unauthenticated, "toy.mine needs a signed-in user")))
        for id in ["0", "-3", "007", "x", "", "99999999999999999999", " 1"] {
            #expect(CallerBindingTests.call(table, method, auth: Auth(userId: id, role: "user"), state: 0)
                == .failure(ServiceError(.unauthenticated, "auth.user_id must be a positive decimal id")), "\(id)")
        }
        #expect(CallerBindingTests.call(table, method, auth: Auth(userId: "1", role: "root"), state: 0)
            == .failure(ServiceError(.unauthenticated, "auth.role must be user or admin")))
    }

    @Test func anAdminMethodRefusesAUser() {
        let table = CallerBindingTests.table(Int.self)
        let method = CallerBindingTests.adminMethod
        #expect(CallerBindingTests.call(table, method, auth: Auth(userId: "5", role: "user"), state: 0)
            == .failure(ServiceError(.permissionDenied, "toy.admin needs an admin")))
        #expect(CallerBindingTests.call(table, method, auth: Auth(userId: "5", role: "admin"), state: 0) == .success(Who(id: 5, role: "admin")))
        // A write runs on the writer, as declared.
        #expect(table.hasWriters)
    }

    @Test func aStateThatAdmitsCallersDecidesWhatTheHandlerSees() {
        let table = CallerBindingTests.table(Admitting.self)
        let state = Admitting(refusing: 9)
        #expect(CallerBindingTests.call(table, CallerBindingTests.userMethod, auth: Auth(userId: "9", role: "user"), state: state)
            == .failure(ServiceError(.unauthenticated, "erased")))
        // Its role, not the envelope's, also for an admin method.
        #expect(CallerBindingTests.call(table, CallerBindingTests.userMethod, auth: Auth(userId: "8", role: "admin"), state: state)
            == .success(Who(id: 8, role: "user")))
        #expect(CallerBindingTests.call(table, CallerBindingTests.adminMethod, auth: Auth(userId: "8", role: "admin"), state: state)
            == .failure(ServiceError(.permissionDenied, "toy.admin needs an admin")))
    }

    @Test func aMethodAnyoneMayCallReadsAnOptionalCaller() {
        let table = CallerBindingTests.table(Int.self)
        let method = CallerBindingTests.openMethod
        #expect(CallerBindingTests.call(table, method, auth: nil, state: 0) == .success(Who(id: 0, role: "none")))
        #expect(CallerBindingTests.call(table, method, auth: Auth(userId: "3", role: "admin"), state: 0) == .success(Who(id: 3, role: "admin")))
        #expect(CallerBindingTests.call(table, method, auth: Auth(userId: "zz", role: "user"), state: 0)
            == .failure(ServiceError(.unauthenticated, "auth.user_id must be a positive decimal id")))
    }

    struct Named: DeclaredShape {
        var name: String
        static let fieldRules: [FieldRule] = [.string("name", characters: 1...5, bytes: 20)]
    }

    /// Runs `method` of `table` on a body (under `key`, as an envelope may write it), answering
    /// what the handler got or the refusal.
    static func run(_ table: HandlerTable<Int>, _ method: some DeclaresMethod, body: String?, key: String = "body",
                    auth: Auth? = nil) -> Result<String, ServiceError> {
        let member = body.map { ",\"" + key + "\":" + $0 } ?? ""
        let envelope = Data(#"{"v":1,"id":"1","type":"\#(method.name)"\#(member)}"#.utf8)
        let context = RequestContext(id: "1", type: method.name, auth: auth, deadline: monotonicNanos() + 1_000_000_000, envelope: envelope, bodyRange: nil)
        do {
            let response = try #require(table.routes[method.name]).run(context, 0)
            return .success(String(decoding: response.body, as: UTF8.self))
        } catch let error as ServiceError {
            return .failure(error)
        } catch {
            return .failure(ServiceError(.internal, "\(error)"))
        }
    }

    /// A client method's params are held to their declared shape before the handler runs; an
    /// internal method's are not (requests between services stay tolerant, as events are).
    @Test func aClientMethodsParamsAreHeldToTheirShapeAndNoInternalOnes() {
        let offered = Method<Named, String>("toy.name", .catalog, .anyone, .read, "a name")
        let inner = Method<Named, String>("toy.inner", .catalog, .internal, .read, "a name, between services")
        var table = HandlerTable<Int>()
        for method in [offered, inner] { table.on(method) { (request: Named, _, _) in request.name } }
        let run = { (method: Method<Named, String>, body: String?) in CallerBindingTests.run(table, method, body: body) }
        #expect(run(offered, #"{"name":"Ann"}"#) == .success(#""Ann""#))
        #expect(run(offered, #"{"name":"Ann","nmae":"x"}"#) == .failure(.invalid("nmae", "unknown parameter 'nmae'; did you mean 'name'?")))
        #expect(run(offered, #"{"name":"Annabel"}"#) == .failure(.invalid("name", "must be 1 to 5 characters")))
        #expect(run(offered, "null") == .failure(ServiceError(.invalidArgument, "missing required field name", field: "name")))
        #expect(run(offered, nil) == .failure(ServiceError(.invalidArgument, "missing required field name", field: "name")))
        #expect(run(inner, #"{"name":"Annabel","nmae":"x"}"#) == .success(#""Annabel""#))
        let none = Method<Empty, String>("toy.none", .catalog, .anyone, .read, "nothing")
        var empty = HandlerTable<Int>()
        empty.on(none) { (_: Empty, _, _) in "none" }
        #expect(CallerBindingTests.run(empty, none, body: "null") == .success(#""none""#))
        #expect(CallerBindingTests.run(empty, none, body: #"{"x":1}"#) == .failure(.invalid("x", "unknown parameter 'x'")))
        // The body is found as the decoder finds it: under a key written with escapes too, and
        // every copy of a repeated one is held to the shape.
        #expect(CallerBindingTests.run(table, offered, body: #"{"name":"Ann","nmae":"x"}"#, key: #"b\u006fdy"#)
                == .failure(.invalid("nmae", "unknown parameter 'nmae'; did you mean 'name'?")))
        #expect(CallerBindingTests.run(table, offered, body: #"{"name":"Ann"}"#, key: #"b\u006fdy"#) == .success(#""Ann""#))
        #expect(CallerBindingTests.run(table, offered, body: #"{"name":"Ann"},"body":{"name":"Bo","x":1}"#)
                == .failure(.invalid("x", "unknown parameter 'x'")))
    }

    /// A user method bound with its `Caller` refuses a request without one before it reads the
    /// params: a stranger learns nothing of them.
    @Test func aUserMethodRefusesAStrangerBeforeReadingParams() {
        let mine = Method<Named, String>("toy.mine", .catalog, .user, .read, "mine")
        var table = HandlerTable<Int>()
        table.on(mine) { (request: Named, _: Caller, _, _) in request.name }
        #expect(CallerBindingTests.run(table, mine, body: #"{"nmae":1}"#) == .failure(ServiceError(.unauthenticated, "toy.mine needs a signed-in user")))
        #expect(CallerBindingTests.run(table, mine, body: #"{"nmae":1}"#, auth: Auth(userId: "4", role: "user"))
                == .failure(.invalid("nmae", "unknown parameter 'nmae'; did you mean 'name'?")))
        #expect(CallerBindingTests.run(table, mine, body: #"{"name":"Ann"}"#, auth: Auth(userId: "4", role: "user")) == .success(#""Ann""#))
    }
}
