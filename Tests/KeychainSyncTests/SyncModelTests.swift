import Foundation
import Testing

@testable import KeychainSync

@Suite struct SyncModelTests {
    @Test func hybridClockPacksMillisecondsAboveTheCounter() {
        let clock = HybridLogicalClock(milliseconds: 1_700_000_000_123, counter: 7)
        #expect(clock.milliseconds == 1_700_000_000_123)
        #expect(clock.rawValue & 0xFFFF == 7)
        #expect(HybridLogicalClock(milliseconds: 5, counter: 0xFFFF) < HybridLogicalClock(milliseconds: 6))
    }

    @Test func recordIDsAreSixteenBytes() {
        #expect(RecordID(Data(count: 16)) != nil)
        #expect(RecordID(Data(count: 15)) == nil)
        #expect(RecordID(Data(count: 32)) == nil)
    }

    @Test func devicesOrderByTheirBytes() {
        let low = DeviceID(UUID(uuidString: "00000000-0000-0000-0000-000000000001")!)
        let high = DeviceID(UUID(uuidString: "F0000000-0000-0000-0000-000000000000")!)
        #expect(low < high)
        #expect(!(high < low))
    }
}
