import Foundation
import Testing
import TestSupport
#if canImport(Glibc)
import Glibc
#endif

/// The fixture's own promise: a child that dies during a test fails that test, by name and
/// signal; one the test stops on purpose does not.
@Suite(.serialized) struct SuiteFixtureTests {
    @Test func aCrashedGatewayFailsTheTestThatWasRunning() throws {
        // The issue teardown records is the one expected here: were it missing, or about
        // something else, this test would fail.
        try withKnownIssue("the fixture's teardown reports the gateway's SIGSEGV") {
            let suite = try SuiteFixture()
            let c = try GatewayConnection(port: suite.port)
            #expect(c.reply(#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#).result(String.self) == "pong")
            // Not through the fixture: a crash, as far as it knows. Swift's runtime catches the
            // first SIGSEGV to print a backtrace and, the fault not being real, carries on; a
            // later one finds the default action and kills. The backtrace may take seconds on a busy machine.
            for _ in 0..<60 where suite.gateway.process.isRunning {
                kill(suite.gateway.pid, SIGSEGV)
                _ = suite.gateway.waitForExit(timeout: 1)
            }
            #expect(suite.gateway.waitForExit(timeout: 1) == .signal(SIGSEGV))
        } matching: { issue in
            let text = issue.comments.map(\.rawValue).joined(separator: "\n")
            return text.contains("tourbus-gateway (pid ") && text.contains("signal 11 (SIGSEGV)") && text.contains("did not stop it on purpose")
        }
    }

    @Test func childrenStoppedOnPurposeDoNotFailTheTest() throws {
        let suite = try SuiteFixture(withSearch: true)
        #expect(suite.processes.map(\.name) == ["tourbus-gateway", "tourbus-search", "tourbus-social", "tourbus-catalog"])
        let search = suite.search?.pid
        suite.stopSearch()
        try suite.startSearch()
        #expect(suite.search?.pid != search && suite.search?.unexpectedEnd() == nil)
        #expect(suite.gateway.stop(with: SIGKILL) == .signal(SIGKILL))
        suite.social.expectExit(because: "this test kills it behind the fixture's back, saying so first")
        kill(suite.social.pid, SIGKILL)
        #expect(suite.social.waitForExit(timeout: 10) == .signal(SIGKILL))
        #expect(suite.processes.allSatisfy { $0.unexpectedEnd() == nil })
    }
}
