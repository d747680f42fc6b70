import Contracts
import Foundation
import TestSupport
import Testing

/// Each method is declared once, in Contracts, and its name is written nowhere else.
@Suite struct MethodDeclarationTests {
    @Test func namesAreUniqueAndDotted() {
        var seen: Set<String> = []
        for method in Methods.all {
            #expect(seen.insert(method.name).inserted, "\(method.name) is declared twice")
            #expect(method.name.wholeMatch(of: /[a-z][a-z_]*(\.[a-z][a-z_]*)*/) != nil, "\(method.name)")
            #expect(!method.summary.isEmpty, "\(method.name) has no summary")
        }
        #expect(Methods.byName.count == Methods.all.count)
        // The runtime's and the internal methods are never offered; every service offers some.
        #expect(Methods.offered.allSatisfy { $0.owner != .runtime && $0.access != .internal })
        for service in MethodOwner.services { #expect(Methods.offered.contains { $0.owner == service }, "\(service)") }
        // Reads are safe to retry; writes only where their repeat changes nothing.
        #expect(Methods.all.filter { $0.kind == .read }.allSatisfy(\.retrySafe) == true)
        #expect(Methods.Catalog.create.retrySafe == false && Methods.Favorites.add.retrySafe == true)
    }

    /// A typed method's params and result have shapes that can be read from their types (the
    /// params' is what a service holds a request to; both are what the schemas say).
    @Test func typedMethodsHaveReadableShapes() throws {
        for method in Methods.all {
            #expect(throws: Never.self, "\(method.name)'s params") { _ = try SchemaProbe.shape(of: method.params) }
            #expect(throws: Never.self, "\(method.name)'s result") { _ = try SchemaProbe.plainShape(of: method.result) }
        }
    }

    /// The errors a method declares name one of its params (a path into their shape: `near.lat`,
    /// `stops[3]`, a free key of a dictionary) or none; a signed-in method can always answer
    /// `unauthenticated`, an admin's `permission_denied`, any `invalid_argument`, and any whose
    /// `token` is a session's `unauthenticated` for it.
    @Test func declaredErrorsNameParamsTheMethodTakes() throws {
        for method in Methods.offered {
            let shape = try SchemaProbe.shape(of: method.params)
            for error in method.declaredErrors {
                #expect(!error.when.isEmpty)
                // `token` is every method's: a session token for this one request, or a share link's.
                guard let field = error.field, field != "token" else { continue }
                #expect(MethodDeclarationTests.path(field, in: shape), "\(method.name) declares \(error.code.rawValue) on '\(field)', which is not a param")
            }
            let codes = Set(method.errors.map(\.code))
            if method.access == .user || method.access == .admin { #expect(codes.contains(.unauthenticated), "\(method.name)") }
            #expect(codes.contains(.permissionDenied) || method.access != .admin, "\(method.name)")
        }
        #expect(Methods.Catalog.get.errors.map(\.code) == [.invalidArgument, .unauthenticated, .notFound])
        // Any request may be malformed, and a token given for it unknown; a share link's token is no session's.
        #expect(Methods.Catalog.categories.errors.map(\.code) == [.invalidArgument, .unauthenticated])
        #expect(Methods.Catalog.categories.errors.last?.field == "token")
        #expect(!Methods.Favorites.shared.errors.contains { $0.code == .unauthenticated && $0.field == "token" })
    }

    /// Whether `path` (`a.b`, `a[2]`, `a[i]`) names a member of `shape`.
    static func path(_ path: String, in shape: Schema) -> Bool {
        var schema = shape
        for part in path.split(separator: ".") {
            var name = Substring(part)
            var indexed = false
            if let bracket = name.firstIndex(of: "[") { name = name[..<bracket]; indexed = true }
            guard case .object(let object) = schema, let member = object.member(String(name)) else {
                if case .dictionary(let value, _) = schema { schema = value; continue }
                return schema == .any  // a free document (a form) has any path
            }
            schema = member.schema
            if indexed {
                guard case .array(let items, _) = schema else { return false }
                schema = items
            }
        }
        return true
    }

    /// `Protocols/openrpc.json` is the document `rpc.discover` answers (indented): every
    /// offered method and no other, its params closed and named. `TOURBUS_WRITE_OPENRPC=1`
    /// writes the file anew.
    @Test func theOpenRPCDocumentIsTheOneInProtocols() throws {
        let file = packageRoot.appendingPathComponent("Protocols/openrpc.json")
        let written = OpenRPC.indentedDocument + Data("\n".utf8)
        if ProcessInfo.processInfo.environment["TOURBUS_WRITE_OPENRPC"] == "1" { try written.write(to: file) }
        #expect(try Data(contentsOf: file) == written, "Protocols/openrpc.json differs from the declarations: run the test with TOURBUS_WRITE_OPENRPC=1")
        let document = try #require(try JSONSerialization.jsonObject(with: OpenRPC.document) as? [String: Any])
        let methods = try #require(document["methods"] as? [[String: Any]])
        #expect(methods.compactMap { $0["name"] as? String } == Methods.offered.map(\.name))
        #expect(!methods.contains { ($0["name"] as? String)?.hasPrefix("sys.") == true || $0["name"] as? String == Methods.Catalog.importApply.name })
        let nearby = try #require(methods.first { $0["name"] as? String == Methods.Search.nearby.name })
        let params = try #require(nearby["params"] as? [[String: Any]])
        let near = try #require(params.first { $0["name"] as? String == "near" }?["schema"] as? [String: Any])
        #expect(near["additionalProperties"] as? Bool == false && near["required"] as? [String] == ["lat", "lon"])
        #expect(((near["properties"] as? [String: Any])?["lat"] as? [String: Any])?["maximum"] as? Double == 90)
        #expect(params.contains { $0["name"] as? String == "token" && $0["required"] as? Bool == false })
        // A text's limits are its TextRule's (characters and bytes); an integer is always bounded.
        let review = try #require(methods.first { $0["name"] as? String == Methods.Reviews.add.name }?["params"] as? [[String: Any]])
        let text = try #require(review.first { $0["name"] as? String == "text" }?["schema"] as? [String: Any])
        #expect(text["maxLength"] as? Int == ReviewInput.textRule.maxCharacters && text["x-maxBytes"] as? Int == ReviewInput.textRule.maxBytes)
        let place = try #require(review.first { $0["name"] as? String == "place_id" }?["schema"] as? [String: Any])
        #expect(place["minimum"] as? Int64 == .min && place["maximum"] as? Int64 == .max)
        let errors = try #require(nearby["errors"] as? [[String: Any]])
        #expect(errors.contains { ($0["data"] as? [String: Any])?["code"] as? String == "invalid_argument" && $0["code"] as? Int == -32602 })
    }

    /// Outside Contracts (and the tests), a method's or a push topic's name as a whole string
    /// literal would be a second place that says it: the code names the declaration instead. The undotted
    /// built-ins (`ping`, `help`, `subscribe`, `unsubscribe`) are also Redis's commands and the
    /// CLI's words, so only dotted names are looked for; comment lines are not code.
    @Test func noMethodNameIsAStringLiteralOutsideContracts() throws {
        let names = Set((Methods.all.map(\.name) + Pushes.all.map(\.name)).filter { $0.contains(".") })
        #expect(names.count > 100 && names.contains(Pushes.groupPosition.name))
        let sources = packageRoot.appendingPathComponent("Sources")
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        var checked = 0, found: [String] = []
        for case let url as URL in files where url.pathExtension == "swift" {
            let path = url.path.replacingOccurrences(of: sources.path + "/", with: "")
            guard !path.hasPrefix("Contracts/") else { continue }
            checked += 1
            for (number, line) in try String(contentsOf: url, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).enumerated()
            where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") {
                for literal in MethodDeclarationTests.stringLiterals(in: line) where names.contains(literal) {
                    found.append("\(path):\(number + 1): \"\(literal)\"")
                }
            }
        }
        #expect(checked > 100)
        #expect(found.isEmpty, "method or topic names written outside Contracts:\n\(found.joined(separator: "\n"))")
    }

    @Test func literalsAreFoundAsTheCompilerSeesThem() {
        #expect(MethodDeclarationTests.stringLiterals(in: #"call("catalog.get", x) // "#) == ["catalog.get"])
        #expect(MethodDeclarationTests.stringLiterals(in: ##"let a = #"search.nearby"#, b = "say \"hi\"""##) == ["search.nearby", #"say \"hi\""#])
        #expect(MethodDeclarationTests.stringLiterals(in: #"x = "a" + "b""#) == ["a", "b"])
    }

    /// The contents of the string literals on one line of Swift (plain and raw, not multi-line).
    static func stringLiterals(in line: Substring) -> [String] {
        line.matches(of: /#?"((?:[^"\\]|\\.)*)"#?/).map { String($0.output.1) }
    }
}
