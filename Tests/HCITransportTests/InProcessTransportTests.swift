import HCI
@testable import HCITransport
import TestSupport
import Testing
#if canImport(Glibc)
import Glibc
#endif

@Suite struct InProcessTransportTests {
    @Test func framesArriveInOrderOnTheOtherSideFromItsQueue() async throws {
        let (host, controller) = InProcessHCITransport.makePair()
        let hostSeen = Collector()
        let controllerSeen = Collector()
        try hostSeen.start(host)
        try controllerSeen.start(controller)
        let commands = sampleFrames(count: 200, seed: 1)
        let events = sampleFrames(count: 50, seed: 2)
        for frame in commands { try host.send(frame) }
        for frame in events { try controller.send(frame) }
        #expect(await controllerSeen.waitForFrames(200) == commands)
        #expect(await hostSeen.waitForFrames(50) == events)
        // Delivered from the receiver's serial queue: one thread at a time, never the test's (sender's) thread.
        let testThread = UInt(pthread_self())
        #expect(!controllerSeen.seen.withLock { $0.frameThreads.contains(testThread) })
        #expect(!hostSeen.seen.withLock { $0.frameThreads.contains(testThread) })
        #expect(host.name == "in-process (host side)")
        #expect(controller.name == "in-process (controller side)")
        host.close()
        #expect(await hostSeen.waitForClose() == .some(nil))
        #expect(await controllerSeen.waitForClose()??.code == .closedByPeer)
    }

    @Test func framesSentBeforeStartAreDeliveredAfterStart() async throws {
        let (host, controller) = InProcessHCITransport.makePair()
        let early = sampleFrames(count: 5, seed: 3)
        for frame in early { try host.send(frame) }
        let controllerSeen = Collector()
        try controllerSeen.start(controller)
        let late = sampleFrames(count: 5, seed: 4)
        for frame in late { try host.send(frame) }
        #expect(await controllerSeen.waitForFrames(10) == early + late)
        controller.close()
        #expect(await controllerSeen.waitForClose() == .some(nil))
    }

    @Test func closeOnEitherSideClosesBothAndSendsThrow() async throws {
        let (host, controller) = InProcessHCITransport.makePair()
        let hostSeen = Collector()
        let controllerSeen = Collector()
        try hostSeen.start(host)
        try controllerSeen.start(controller)
        // Frames sent before the close still reach the peer, then the peer learns of the close.
        let frames = sampleFrames(count: 3, seed: 5)
        for frame in frames { try controller.send(frame) }
        controller.close()
        #expect(await hostSeen.waitForFrames(3) == frames)
        let hostClose = await hostSeen.waitForClose()
        #expect(hostClose??.code == .closedByPeer)
        #expect(await controllerSeen.waitForClose() == .some(nil))
        #expect(throws: HCITransportError(.closed, "in-process (controller side): the transport is closed")) {
            try controller.send(frames[0])
        }
        #expect(throws: HCITransportError(.closedByPeer, "in-process (host side): the peer closed the link")) {
            try host.send(frames[0])
        }
        // Closing again is harmless and reports nothing more.
        host.close()
        controller.close()
        #expect(hostSeen.seen.withLock { $0.closeCount } == 1)
        #expect(controllerSeen.seen.withLock { $0.closeCount } == 1)
        #expect(controllerSeen.frames.isEmpty)
    }

    @Test func startTwiceIsRefused() async throws {
        let (host, controller) = InProcessHCITransport.makePair()
        let seen = Collector()
        try seen.start(host)
        #expect(throws: HCITransportError(.alreadyStarted, "in-process (host side): start was already called")) {
            try seen.start(host)
        }
        host.close()
        controller.close()
        #expect(await seen.waitForClose() == .some(nil))
    }
}
