import Bus
import Foundation
import Replication
import ServiceKit
import Testing

/// What a replica of a replicated catalog answers at its door, by its part in the cluster.
@Suite struct ReplicaDoorTests {
    func door(_ status: RaftStatus) -> @Sendable (String) -> ServiceError? {
        ReplicaDoor.admit(service: "catalog", replica: 2, leads: { status.isReadyLeader }) { status }
    }

    @Test func theLeaderAnswersEverything() {
        var status = RaftStatus()
        status.role = .leader
        status.leaderID = 2
        status.isReadyLeader = true
        for type in ["catalog.create", "catalog.get", "strings.get", "sys.transfer"] { #expect(door(status)(type) == nil, "\(type)") }
    }

    @Test func aFollowerInStepAnswersOnlyTheReadsThatMayBeStale() throws {
        var status = RaftStatus()
        status.role = .follower
        status.leaderID = 1
        status.leaderContact = monotonicNanos() - 200_000_000
        status.leaderHeard = status.leaderContact
        let admit = door(status)
        #expect(admit("catalog.get") == nil && admit("catalog.list") == nil && admit("sys.ping") == nil && admit("sys.stats") == nil)
        #expect(admit("sys.backup") == nil)
        let refusal = try #require(admit("catalog.create"))
        #expect(refusal.code == .unavailable && refusal.leader == 1)
        #expect(refusal.message == "catalog.create is answered by the leader of catalog, and replica 2 is not it: the leader is replica 1")
        #expect(admit("strings.get")?.leader == 1)
    }

    @Test func aFollowerOutOfStepAnswersNoReadOfTheCatalog() {
        var status = RaftStatus()
        status.role = .follower
        status.leaderID = 1
        // Applied what it heard from its leader 1.5 s ago, more than catalog.get's second.
        status.leaderContact = monotonicNanos() - 1_500_000_000
        status.leaderHeard = monotonicNanos() - 50_000_000
        #expect(door(status)("catalog.get")?.leader == 1)
        // Not matched its leader's log yet (restarted, wiped): no contact time at all.
        status.leaderContact = nil
        #expect(door(status)("catalog.get")?.leader == 1)
        #expect(door(status)("sys.ping") == nil)
        // A backup is of what it applied: a follower out of step would give an old copy.
        #expect(door(status)("sys.backup")?.leader == 1)
    }

    @Test func aLeaderNotHeardFromLatelyIsNotNamed() throws {
        var status = RaftStatus()
        status.role = .follower
        status.leaderID = 1
        // libraft still takes it for the leader until its election timeout: clients must not.
        status.leaderHeard = monotonicNanos() - 600_000_000
        let refusal = try #require(door(status)("catalog.create"))
        #expect(refusal.leader == 0)
        #expect(refusal.message.hasSuffix("replica 1 led, but has not been heard from lately"))
        status.leaderHeard = nil
        #expect(door(status)("catalog.create")?.leader == 0)
        status.leaderHeard = monotonicNanos() - 100_000_000
        #expect(door(status)("catalog.create")?.leader == 1)
    }

    @Test func withNoLeaderOrOneStillCatchingUpTheRefusalSaysSo() {
        var status = RaftStatus()
        status.role = .candidate
        #expect(door(status)("catalog.create")?.leader == 0)
        #expect(door(status)("catalog.create")?.message.hasSuffix("no leader is known yet") == true)
        status.role = .leader
        status.leaderID = 2
        #expect(door(status)("catalog.create")?.leader == 2)
        #expect(door(status)("catalog.create")?.message.hasSuffix("it leads but has not yet applied its predecessors' commits") == true)
    }
}
