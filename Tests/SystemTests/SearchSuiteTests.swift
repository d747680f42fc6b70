import Foundation
import Testing

@Suite(.serialized) struct SearchSuiteTests {
    /// Polls the gateway (bounded: 10 s) until the nearby answer satisfies `condition`.
    func eventually(_ c: GatewayConnection, _ params: String, _ condition: ([[String: Any]]) -> Bool) -> Bool {
        for i in 0..<200 {
            let reply = json(c.call(#"{"jsonrpc":"2.0","id":\#(i),"method":"search.nearby","params":\#(params)}"#))
            if let hits = (reply["result"] as? [String: Any])?["hits"] as? [[String: Any]], condition(hits) { return true }
            usleep(50_000)
        }
        return false
    }

    @Test func createUpdateDeleteShowInSearchThroughTheGateway() throws {
        let suite = try SuiteFixture(withSearch: true)
        let c = try GatewayConnection(port: suite.port)
        let created = json(c.call(#"{"jsonrpc":"2.0","id":1,"method":"catalog.create","params":{"name":"Circular Quay Wharf","category":"transport","lat":-33.8612,"lon":151.2111}}"#))
        let id = (created["result"] as? [String: Any])?["id"] as? Int
        #expect(id == 1)
        let here = #"{"lat":-33.8612,"lon":151.2111,"radius_m":200}"#
        #expect(eventually(c, here) { $0.first?["name"] as? String == "Circular Quay Wharf" })

        _ = c.call(#"{"jsonrpc":"2.0","id":2,"method":"catalog.update","params":{"id":1,"name":"Circular Quay"}}"#)
        #expect(eventually(c, here) { $0.first?["name"] as? String == "Circular Quay" })

        _ = c.call(#"{"jsonrpc":"2.0","id":3,"method":"catalog.delete","params":{"id":1}}"#)
        #expect(eventually(c, here) { $0.isEmpty })

        let bad = json(c.call(#"{"jsonrpc":"2.0","id":4,"method":"search.nearby","params":{"lat":0,"lon":0,"radius_m":60000}}"#))
        #expect(((bad["error"] as? [String: Any])?["data"] as? [String: Any])?["field"] as? String == "radius_m")
    }
}
