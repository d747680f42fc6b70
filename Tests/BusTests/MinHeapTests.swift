import Bus
import Testing
import TestSupport

/// The heap gives back what was pushed, least first, however pushes and pops interleave.
@Suite struct MinHeapTests {
    @Test func popsInOrderWhateverTheInterleaving() {
        var rng = SplitMix64(seed: 21)
        for round in 0..<200 {
            var heap = MinHeap<Int>()
            var reference: [Int] = []
            for _ in 0..<Int.random(in: 0...300, using: &rng) {
                if Bool.random(using: &rng) || reference.isEmpty {
                    let value = Int.random(in: -50...50, using: &rng)
                    heap.push(value)
                    reference.append(value)
                } else {
                    reference.sort()
                    #expect(heap.first == reference.first, "round \(round)")
                    #expect(heap.pop() == reference.removeFirst(), "round \(round)")
                }
            }
            reference.sort()
            var popped: [Int] = []
            while let value = heap.pop() { popped.append(value) }
            #expect(popped == reference, "round \(round)")
            #expect(heap.isEmpty && heap.first == nil)
        }
    }
}
