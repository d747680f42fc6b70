import Bus
import Contracts
import Foundation
@testable import NotifyService
import Testing
import TestSupport

/// The notify service alone over real sockets: every handler, and every bad input naming its field.
@Suite struct NotifyServiceTests {
    // MARK: Form

    @Test func theFormIsAbsentUntilAnAdminSetsItThenOnlyAGreaterVersionReplacesIt() throws {
        let f = try NotifyFixture()
        #expect(refusedField(f.error("annotations.form")) == "not_found -")
        #expect(refusedField(f.error("annotations.submit", #"{"lat":-33.861,"lon":151.211,"values":{"kind":"a"}}"#, as: 2)) == "unavailable -")
        let body = #"{"form":\#(notifyFormJSON())}"#
        #expect(refusedField(f.error("annotations.form.set", body)) == "unauthenticated -")
        #expect(refusedField(f.error("annotations.form.set", body, as: 2)) == "permission_denied -")
        #expect(try f.call("annotations.form.set", body, as: 1, role: "admin")["version"] as? Int == 1)
        #expect(refusedField(f.error("annotations.form.set", body, as: 1, role: "admin")) == "conflict form.version")
        #expect(refusedField(f.error("annotations.form.set", #"{}"#, as: 1, role: "admin")) == "invalid_argument form")
        // A bad form is refused with the path of its fault under `form`.
        let misspelt = notifyFormJSON(version: 2).replacingOccurrences(of: "depends_on", with: "depend_on")
        #expect(refusedField(f.error("annotations.form.set", #"{"form":\#(misspelt)}"#, as: 1, role: "admin")) == "invalid_argument form.fields[1].depend_on")
        #expect(try f.call("annotations.form.set", #"{"form":\#(notifyFormJSON(version: 2))}"#, as: 1, role: "admin")["version"] as? Int == 2)
        #expect(try f.call("annotations.form")["version"] as? Int == 2)
    }

    @Test func theFormViewKeepsOnlyWhatCanBePickedAtThePositionInTheLanguageAsked() throws {
        let f = try NotifyFixture()
        try f.setForm()
        func names(_ reply: [String: Any]) -> [String] { (reply["fields"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String } }
        #expect(names(try f.call("annotations.form")) == ["kind", "detail", "line"])
        #expect(names(try f.call("annotations.form", #"{"near":{"lat":-33.861,"lon":151.211}}"#)) == ["kind", "detail", "line"])
        #expect(names(try f.call("annotations.form", #"{"near":{"lat":48.85,"lon":2.35}}"#)) == ["kind", "detail"])
        let french = try f.call("annotations.form", #"{"lang":"fr-CA"}"#)
        #expect((french["fields"] as? [[String: Any]])?.first?["label"] as? String == "Genre")
        #expect(refusedField(f.error("annotations.form", #"{"near":{"lat":-33.861}}"#)) == "invalid_argument near.lon")
        #expect(refusedField(f.error("annotations.form", #"{"near":{"lon":151.211}}"#)) == "invalid_argument near.lat")
        #expect(refusedField(f.error("annotations.form", #"{"near":{"lat":91,"lon":0}}"#)) == "invalid_argument near.lat")
        #expect(refusedField(f.error("annotations.form", #"{"near":{"lat":0,"lon":-180.5}}"#)) == "invalid_argument near.lon")
    }

    @Test func theFormGivenAtStartIsStoredOnlyWhenTheDatabaseHasNone() throws {
        let folder = TemporaryFolder("notify")
        do {
            let first = try NotifyFixture(initialForm: notifyFormJSON(version: 3), folder: folder)
            #expect(try first.call("annotations.form")["version"] as? Int == 3)
        }
        let restarted = try NotifyFixture(initialForm: notifyFormJSON(version: 7), folder: folder)
        #expect(try restarted.call("annotations.form")["version"] as? Int == 3)
    }

    // MARK: Submit, get, delete

    @Test func submitChecksEveryValueAgainstTheFormAtThePosition() throws {
        let f = try NotifyFixture()
        try f.setForm()
        func submit(_ body: String) -> String { refusedField(f.error("annotations.submit", body, as: 2)) }
        let at = #""lat":-33.861,"lon":151.211"#
        #expect(submit(#"{\#(at),"values":{"kind":"a","detail":"a1","line":"t1","colour":"red"}}"#) == "invalid_argument values.colour")
        #expect(submit(#"{\#(at),"values":{"kind":"c","detail":"a1","line":"t1"}}"#) == "invalid_argument values.kind")
        #expect(submit(#"{\#(at),"values":{"kind":"a","detail":"b1","line":"t1"}}"#) == "invalid_argument values.detail")
        #expect(submit(#"{\#(at),"values":{"kind":"a","detail":"a1"}}"#) == "invalid_argument values.line")
        // The line exists only near the quay: outside it, it is refused, and not required.
        #expect(submit(#"{"lat":48.85,"lon":2.35,"values":{"kind":"a","detail":"a1","line":"t1"}}"#) == "invalid_argument values.line")
        #expect(submit(#"{"lat":48.85,"lon":2.35,"values":{"kind":"a","detail":"a1"}}"#) == "no error")
        #expect(submit(#"{"lat":-90.0001,"lon":151.211,"values":{"kind":"a"}}"#) == "invalid_argument lat")
        #expect(submit(#"{"lat":-33.861,"lon":180.0001,"values":{"kind":"a"}}"#) == "invalid_argument lon")
        #expect(submit(#"{"lon":151.211,"values":{"kind":"a"}}"#) == "invalid_argument lat")
        #expect(refusedField(f.error("annotations.submit", #"{\#(at),"values":\#(quayValues)}"#)) == "unauthenticated -")
    }

    @Test func textIsAtMost500CharactersAnd8000Bytes() throws {
        let f = try NotifyFixture()
        try f.setForm()
        #expect(try f.submit(by: 2, text: String(repeating: "é", count: 500)) > 0)  // 1,000 bytes
        // 500 flags, 8 bytes each: 500 characters a phone's keyboard makes.
        #expect(try f.submit(by: 2, text: String(repeating: "\u{1F1E6}\u{1F1FA}", count: 500)) > 0)
        #expect(throws: ServiceError.self) { try f.submit(by: 2, text: String(repeating: "a", count: 501)) }
        // 400 characters of 25 bytes each (a letter and twelve combining accents): 10,000 bytes.
        let heavy = String(repeating: "e" + String(repeating: "\u{0301}", count: 12), count: 400)
        #expect(heavy.count == 400 && heavy.utf8.count == 10_000)
        do {
            try f.submit(by: 2, text: heavy)
            Issue.record("10,000 bytes of text were accepted")
        } catch let error as ServiceError {
            #expect(error.field == "text" && error.message.contains("bytes"))
        }
        do {
            try f.submit(by: 2, text: "line\u{202E}reversed")
            Issue.record("a bidirectional override was accepted")
        } catch let error as ServiceError {
            #expect(error.field == "text")
        }
    }

    @Test func anAnnotationIsGotUntilItsAuthorOrAnAdminDeletesItOrItExpires() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let reply = try f.call("annotations.submit", #"{"lat":-33.861,"lon":151.211,"values":\#(quayValues),"text":"Ferry late"}"#, as: 2)
        let id = (reply["id"] as? NSNumber)?.int64Value ?? 0
        #expect(reply["user_id"] as? Int == 2 && reply["text"] as? String == "Ferry late")
        #expect(reply["created_at"] as? String == "2026-06-01T00:00:00.000Z" && reply["expires_at"] as? String == "2026-06-01T12:00:00.000Z")
        #expect(reply["values"] as? [String: String] == ["kind": "a", "detail": "a1", "line": "t1"])
        #expect(try f.call("annotations.get", #"{"id":\#(id)}"#)["text"] as? String == "Ferry late")
        #expect(refusedField(f.error("annotations.delete", #"{"id":\#(id)}"#, as: 3)) == "permission_denied -")
        #expect(try f.call("annotations.delete", #"{"id":\#(id)}"#, as: 2)["deleted"] as? Bool == true)
        #expect(refusedField(f.error("annotations.get", #"{"id":\#(id)}"#)) == "not_found id")
        #expect(refusedField(f.error("annotations.delete", #"{"id":\#(id)}"#, as: 2)) == "not_found id")

        let other = try f.submit(by: 2)
        #expect(try f.call("annotations.delete", #"{"id":\#(other)}"#, as: 9, role: "admin")["id"] as? Int == Int(other))
        // 12 h after its creation an annotation is still there; 1 ms later it is purged.
        let lasting = try f.submit(by: 2)
        f.advance(12 * 3_600_000)
        #expect(refusedField(f.error("annotations.get", #"{"id":\#(lasting)}"#)) == "no error")
        f.advance(1)
        #expect(refusedField(f.error("annotations.get", #"{"id":\#(lasting)}"#)) == "not_found id")
    }

    // MARK: Nearby and viewport

    /// With a budget of one annotation a page, pages end early (and some are empty) but the
    /// pages read to the end are the same.
    @Test(arguments: [5_000, 1]) func nearbyPagesLiveAnnotationsNearestFirst(budget: Int) throws {
        let f = try NotifyFixture { $0.nearbyReadBudget = budget }
        try f.setForm()
        // Five annotations going north from the quay, 100 m apart, submitted farthest first.
        var ids: [Int64] = []
        for step in (0..<5).reversed() { ids.insert(try f.submit(by: 2, lat: quay.lat + Double(step) * 0.0009), at: 0) }
        try f.submit(by: 2, lat: quay.lat + 0.05, values: #"{"kind":"a","detail":"a1"}"#)  // 5.5 km away, where t1 is not
        var seen: [Int64] = []
        var cursor: String?
        for _ in 0..<20 {
            let cursorMember = cursor.map { #","cursor":"\#($0)""# } ?? ""
            let page = try f.call("annotations.nearby", #"{"near":{"lat":\#(quay.lat),"lon":\#(quay.lon)},"radius_m":1000,"limit":2\#(cursorMember)}"#)
            seen += (page["annotations"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
            cursor = page["next_cursor"] as? String
            if cursor == nil { break }
        }
        #expect(seen == ids)
        #expect(cursor == nil)
        guard budget > 1 else { return }
        let near = try f.call("annotations.nearby", #"{"near":{"lat":\#(quay.lat),"lon":\#(quay.lon)},"radius_m":150}"#)
        #expect((near["annotations"] as? [[String: Any]])?.count == 2 && near["next_cursor"] == nil)

        let at = #""near":{"lat":-33.861,"lon":151.211}"#
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":0.5}"#)) == "invalid_argument radius_m")
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":50001}"#)) == "invalid_argument radius_m")
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":100,"limit":0}"#)) == "invalid_argument limit")
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":100,"limit":101}"#)) == "invalid_argument limit")
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":100,"cursor":"bm9wZQ"}"#)) == "invalid_argument cursor")
        #expect(refusedField(f.error("annotations.nearby", #"{\#(at),"radius_m":100,"cursor":"\#(String(repeating: "A", count: 200))"}"#))
            == "invalid_argument cursor")
        #expect(refusedField(f.error("annotations.nearby", #"{"near":{"lat":-91,"lon":151.211},"radius_m":100}"#)) == "invalid_argument near.lat")
    }

    @Test func viewportPagesByIdWithinTheBoxAndAcrossTheAntimeridian() throws {
        let f = try NotifyFixture()
        try f.setForm()
        let a = try f.submit(by: 2), b = try f.submit(by: 3, lat: quay.lat + 0.001)
        try f.submit(by: 2, lat: 48.85, lon: 2.35, values: #"{"kind":"b","detail":"b1"}"#)
        let fiji = try f.submit(by: 2, lat: -17.7, lon: 179.99, values: #"{"kind":"b","detail":"b1"}"#)
        let first = try f.call("annotations.viewport", #"{"bbox":{"south":-34,"west":151,"north":-33,"east":152},"limit":1}"#)
        let firstIds = (first["annotations"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
        let cursor = first["next_cursor"] as? String ?? ""
        let second = try f.call("annotations.viewport", #"{"bbox":{"south":-34,"west":151,"north":-33,"east":152},"limit":1,"cursor":"\#(cursor)"}"#)
        let secondIds = (second["annotations"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value }
        #expect(firstIds == [a] && secondIds == [b] && second["next_cursor"] == nil)
        let across = try f.call("annotations.viewport", #"{"bbox":{"south":-40,"west":170,"north":0,"east":-170}}"#)
        #expect((across["annotations"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value } == [fiji])

        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":-91,"west":0,"north":0,"east":1}}"#)) == "invalid_argument bbox.south")
        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":0,"west":0,"north":90.5,"east":1}}"#)) == "invalid_argument bbox.north")
        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":0,"west":-181,"north":1,"east":1}}"#)) == "invalid_argument bbox.west")
        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":0,"west":0,"north":1,"east":181}}"#)) == "invalid_argument bbox.east")
        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":2,"west":0,"north":1,"east":1}}"#)) == "invalid_argument bbox.north")
        #expect(refusedField(f.error("annotations.viewport", #"{"bbox":{"south":0,"west":0,"north":1,"east":1},"cursor":"x"}"#)) == "invalid_argument cursor")
    }

    @Test func aPageStopsAtItsByteBudgetAndStillMovesOn() throws {
        let f = try NotifyFixture { $0.pageBudgetBytes = 1_000 }
        try f.setForm()
        // Each annotation takes about 600 bytes: a page holds one, and the next page goes on after it.
        var ids: [Int64] = []
        for _ in 0..<3 { ids.append(try f.submit(by: 2, text: String(repeating: "x", count: 400))) }
        var seen: [[Int64]] = []
        var cursor: String?
        for _ in 0..<4 {
            let cursorMember = cursor.map { #","cursor":"\#($0)""# } ?? ""
            let page = try f.call("annotations.viewport", #"{"bbox":{"south":-34,"west":151,"north":-33,"east":152}\#(cursorMember)}"#)
            seen.append((page["annotations"] as? [[String: Any]] ?? []).compactMap { ($0["id"] as? NSNumber)?.int64Value })
            cursor = page["next_cursor"] as? String
            if cursor == nil { break }
        }
        #expect(seen == ids.map { [$0] })
    }

    // MARK: Settings

    @Test func settingsHaveDefaultsAndEveryValueIsChecked() throws {
        let f = try NotifyFixture()
        let defaults = try f.call("notify.settings.get", as: 4)
        #expect(defaults["alerts"] as? Bool == true && defaults["radius_m"] as? Int == 500 && defaults["timezone"] as? String == "UTC")
        #expect(defaults["app_timer_min"] == nil && defaults["idle_timer_min"] == nil)
        #expect(refusedField(f.error("notify.settings.get")) == "unauthenticated -")
        func set(_ body: String) -> String { refusedField(f.error("notify.settings.set", body, as: 4)) }
        #expect(set(#"{"radius_m":49}"#) == "invalid_argument radius_m")
        #expect(set(#"{"radius_m":5001}"#) == "invalid_argument radius_m")
        #expect(set(#"{"timezone":"Mars/Olympus_Mons"}"#) == "invalid_argument timezone")
        #expect(set(#"{"timezone":"\#(String(repeating: "A", count: 65))"}"#) == "invalid_argument timezone")
        #expect(set(#"{"app_timer_min":0}"#) == "invalid_argument app_timer_min")
        #expect(set(#"{"idle_timer_min":1441}"#) == "invalid_argument idle_timer_min")
        #expect(set(#"{"alerts":"yes"}"#) == "invalid_argument alerts")
        let changed = try f.call("notify.settings.set", #"{"alerts":false,"radius_m":5000,"timezone":"Australia/Sydney","app_timer_min":30,"idle_timer_min":1440}"#, as: 4)
        #expect(changed["radius_m"] as? Int == 5000 && changed["timezone"] as? String == "Australia/Sydney" && changed["idle_timer_min"] as? Int == 1440)
        let cleared = try f.call("notify.settings.set", #"{"app_timer_min":null,"radius_m":50}"#, as: 4)
        #expect(cleared["app_timer_min"] == nil && cleared["idle_timer_min"] as? Int == 1440 && cleared["alerts"] as? Bool == false)
        let again = try f.call("notify.settings.get", as: 4)
        #expect(again["radius_m"] as? Int == 50 && again["timezone"] as? String == "Australia/Sydney")
        #expect(try f.call("notify.settings.get", as: 5)["radius_m"] as? Int == 500)
    }
}
