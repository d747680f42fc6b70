import Foundation
import Testing
import TestSupport

@Suite(.serialized) struct SearchSuiteTests {
    /// Polls the gateway (bounded: 10 s) until the nearby answer satisfies `condition`.
    func eventually(_ c: GatewayConnection, _ params: String, _ condition: ([[String: Any]]) -> Bool) -> Bool {
        TestSupport.eventually {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"search.nearby","params":\#(params)}"#))
            return ((reply["result"] as? [String: Any])?["hits"] as? [[String: Any]]).map(condition) ?? false
        }
    }

    @Test func createUpdateDeleteShowInSearchThroughTheGateway() throws {
        let suite = try SuiteFixture(withSearch: true)
        let c = try suite.adminConnection()
        let created = c.reply(#"{"jsonrpc":"2.0","id":1,"method":"catalog.create","params":{"name":"Circular Quay Wharf","category":"transport","lat":-33.8612,"lon":151.2111}}"#)
        let id = created.field("id", Int.self)
        #expect(id == 1)
        let here = #"{"near":{"lat":-33.8612,"lon":151.2111},"radius_m":200}"#
        #expect(eventually(c, here) { $0.first?["name"] as? String == "Circular Quay Wharf" })

        _ = c.call(#"{"jsonrpc":"2.0","id":2,"method":"catalog.update","params":{"id":1,"name":"Circular Quay"}}"#)
        #expect(eventually(c, here) { $0.first?["name"] as? String == "Circular Quay" })

        _ = c.call(#"{"jsonrpc":"2.0","id":3,"method":"catalog.delete","params":{"id":1}}"#)
        #expect(eventually(c, here) { $0.isEmpty })

        let bad = c.reply(#"{"jsonrpc":"2.0","id":4,"method":"search.nearby","params":{"near":{"lat":0,"lon":0},"radius_m":60000}}"#)
        #expect(bad.failure?.data?.field == "radius_m")
        // Categories are checked against the catalog's list.
        let unknown = json(c.call(#"{"jsonrpc":"2.0","id":5,"method":"search.text","params":{"q":"quay","categories":["spaceship"]}}"#))
        let error = unknown["error"] as? [String: Any]
        #expect((error?["data"] as? [String: Any])?["field"] as? String == "categories")
        #expect((error?["message"] as? String)?.hasPrefix("unknown category 'spaceship'; known: attraction, bar") == true)
        #expect(c.reply(#"{"jsonrpc":"2.0","id":6,"method":"search.nearby","params":{"near":{"lat":0,"lon":0},"radius_m":100,"exclude_categories":["museum"]}}"#).succeeded)
    }

    @Test func aSearchThatWasDownFindsTenThousandNewPlacesOnce() throws {
        let suite = try SuiteFixture(withSearch: true)
        let c = try suite.adminConnection(timeoutMilliseconds: 30_000)
        suite.stopSearch()
        // 10,000 places in batches of 100, each batch one line.
        for batch in 0..<100 {
            let members = (0..<100).map { i -> String in
                let n = batch * 100 + i
                return #"{"jsonrpc":"2.0","id":\#(n),"method":"catalog.create","params":{"name":"Place \#(n)","category":"cafe","lat":\#(-33.9 + Double(n % 100) * 0.001),"lon":\#(151.1 + Double(n / 100) * 0.001)}}"#
            }
            let reply = try JSONSerialization.jsonObject(with: Data((c.call("[" + members.joined(separator: ",") + "]") ?? "").utf8)) as? [[String: Any]]
            #expect(reply?.count == 100 && reply?.allSatisfy { $0["result"] != nil } == true)
        }
        try suite.startSearch()
        var ids: [Int] = []
        for _ in 0..<300 {
            ids = []
            var cursor: String?
            for page in 0..<1_000 {
                let params = #"{"bbox":{"south":-34,"west":151,"north":-33.7,"east":151.3},"limit":50"# + (cursor.map { #","cursor":"\#($0)"}"# } ?? "}")
                let reply = json(c.call(#"{"jsonrpc":"2.0","id":\#(page),"method":"search.viewport","params":\#(params)}"#))
                let result = reply["result"] as? [String: Any]
                ids += ((result?["hits"] as? [[String: Any]]) ?? []).compactMap { $0["id"] as? Int }
                cursor = result?["next_cursor"] as? String
                if cursor == nil { break }
            }
            if ids.count >= 10_000 { break }
            usleep(100_000)
        }
        #expect(ids.count == 10_000 && Set(ids).count == 10_000)
    }
}
