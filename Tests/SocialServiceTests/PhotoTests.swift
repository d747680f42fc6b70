import Bus
import Dispatch
import Foundation
import SocialService
import Storage
import Synchronization
import Testing
import TestSupport
@testable import TourMaps

/// Profile photos in the social service alone, over its real sockets: uploads in chunks, the
/// checks of the JPEG, the two squares read back, who may see them, and every refusal from
/// the sender's side.
@Suite struct PhotoTests {
    /// A `width`×`height` JPEG: red grows to the right, green downwards (TestImages' gradient).
    static func gradient(width: Int, height: Int) throws -> Data {
        var pixels = [UInt8](repeating: 128, count: width * height * 3)
        for y in 0..<height {
            for x in 0..<width {
                pixels[(y * width + x) * 3] = UInt8(x * 255 / (width - 1))
                pixels[(y * width + x) * 3 + 1] = UInt8(y * 255 / (height - 1))
            }
        }
        return try #require(RGBImage(width: width, height: height, pixels: pixels)).jpeg(quality: 90)
    }

    /// A solid `color` square JPEG.
    static func solid(_ color: UInt8, side: Int = 200) throws -> Data {
        try #require(RGBImage(width: side, height: side, pixels: [UInt8](repeating: color, count: side * side * 3))).jpeg()
    }

    /// Begins an upload of `user` and appends `jpeg` in chunks of `chunk` bytes; answers its id.
    static func upload(_ f: SocialFixture, _ jpeg: Data, as user: Int64, chunk: Int = 100_000) throws -> String {
        let id = try #require(try f.call("profile.photo.upload.begin", as: user)["upload_id"] as? String)
        var offset = 0
        while offset < jpeg.count {
            let piece = jpeg[offset..<min(jpeg.count, offset + chunk)]
            let reply = try f.call("profile.photo.upload.append",
                                   #"{"upload_id":"\#(id)","offset":\#(offset),"chunk":"\#(Data(piece).base64EncodedString())"}"#, as: user)
            offset += piece.count
            #expect(reply["bytes"] as? Int == offset)
        }
        return id
    }

    /// Uploads and commits `jpeg` as `user`'s photo; answers the commit's reply.
    @discardableResult
    static func setPhoto(_ f: SocialFixture, _ jpeg: Data, as user: Int64) throws -> [String: Any] {
        try f.call("profile.photo.upload.commit", #"{"upload_id":"\#(try upload(f, jpeg, as: user))"}"#, as: user)
    }

    /// `profile.photo`'s reply: its body and its one attachment.
    static func photo(_ f: SocialFixture, of user: Int64?, size: Int, as viewer: Int64?) throws -> (body: [String: Any], jpeg: Data) {
        let userField = user.map { #""user_id":\#($0),"# } ?? ""
        let reply = try f.client.request(type: "profile.photo", body: Data(#"{\#(userField)"size":\#(size)}"#.utf8),
                                         auth: viewer.map { Auth(userId: String($0), role: "user") }, timeoutMilliseconds: 5_000)
        #expect(reply.attachments.count == 1)
        let body = try #require(try JSONSerialization.jsonObject(with: reply.bodyJSON) as? [String: Any])
        return (body, try #require(reply.attachments.first))
    }

    @Test func aPhotoIsStoredAsTwoCentredSquaresAndServedToAnyone() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        // 1600×1000: the square is the middle 1000 columns, 300 to 1299.
        let committed = try Self.setPhoto(f, try Self.gradient(width: 1600, height: 1000), as: ann)
        let stamp = try #require((committed["photo"] as? [String: Any])?["updated_at"] as? String)
        #expect(committed["bytes"] as? Int ?? 0 > 0)
        #expect((try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)["photo"] as? [String: Any])?["updated_at"] as? String == stamp)
        #expect(try f.call("profile.get", #"{"user_id":\#(ben)}"#, as: ann)["photo"] == nil)

        let views: [(Int, Int64?)] = [(512, ben), (96, ann), (512, nil)]
        for (size, viewer) in views {
            let (body, jpeg) = try Self.photo(f, of: ann, size: size, as: viewer)
            let header = try JPEGImage.check(jpeg)
            #expect(header.width == size && header.height == size)
            #expect(body["content_type"] as? String == "image/jpeg" && body["bytes"] as? Int == jpeg.count && body["size"] as? Int == size)
            #expect(body["updated_at"] as? String == stamp && body["user_id"] as? Int == Int(ann))
            // Centred: the left edge shows column 300 of 1600, the right column 1299.
            let pixels = try JPEGImage.decode(jpeg)
            #expect(abs(Int(pixels.color(x: 0, y: size / 2).red) - 300 * 255 / 1599) <= 6)
            #expect(abs(Int(pixels.color(x: size - 1, y: size / 2).red) - 1299 * 255 / 1599) <= 6)
        }
        // Without user_id: the caller's own.
        #expect(try JPEGImage.check(try Self.photo(f, of: nil, size: 96, as: ann).jpeg).width == 96)

        // A new photo replaces the old one, both sizes.
        f.clock.advance(60)
        let second = try Self.setPhoto(f, try Self.solid(30), as: ann)
        #expect((second["photo"] as? [String: Any])?["updated_at"] as? String != stamp)
        for size in [512, 96] {
            #expect(try JPEGImage.decode(try Self.photo(f, of: ann, size: size, as: ben).jpeg).color(x: 10, y: 10).distance(to: RGBColor(red: 30, green: 30, blue: 30)) <= 3)
        }
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM photos") == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_uploads") == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_upload_chunks") == 0)

        // Deleting it removes both; deleting again deletes nothing.
        #expect(try f.call("profile.photo.delete", as: ann)["deleted"] as? Bool == true)
        #expect(try f.call("profile.photo.delete", as: ann)["deleted"] as? Bool == false)
        for size in [512, 96] {
            #expect(f.error("profile.photo", #"{"user_id":\#(ann),"size":\#(size)}"#, as: ben) == ServiceError(.notFound, "user \(ann) has no photo", field: "user_id"))
        }
        #expect(try f.call("profile.get", #"{"user_id":\#(ann)}"#, as: ben)["photo"] == nil)
    }

    @Test func imagesThatAreNotPhotosAreRefusedWithTheirReason() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        func commit(_ data: Data) throws -> ServiceError? {
            let id = try Self.upload(f, data, as: ann)
            let error = f.error("profile.photo.upload.commit", #"{"upload_id":"\#(id)"}"#, as: ann)
            // A refused upload is gone: committing it again finds nothing.
            #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(id)"}"#, as: ann)?.code == .notFound)
            return error
        }
        #expect(try commit(Data("<svg/>".utf8)) == ServiceError.invalid("upload_id", "the photo is not a JPEG file (it must start with the bytes FF D8 FF)"))
        let cmyk = try [UInt8](repeating: 40, count: 32 * 32 * 4).withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(buffer, offset: 0, width: 32, rowBytes: 128, height: 32, quality: 90, subsampling: 0, cmyk: true)
        }
        #expect(try commit(cmyk) == ServiceError.invalid("upload_id", "the photo is a CMYK JPEG (made for print): save it as RGB"))
        // A progressive file with its last scan repeated to 65 scans.
        let progressive = try [UInt8](repeating: 90, count: 64 * 64 * 3).withUnsafeBufferPointer { buffer in
            [UInt8](try TurboJPEGEncoder().encode(buffer, offset: 0, width: 64, rowBytes: 192, height: 64, quality: 90, subsampling: 0, progressive: true))
        }
        let lastScan = try #require((0..<(progressive.count - 1)).last { progressive[$0] == 0xFF && progressive[$0 + 1] == 0xDA })
        let scans = Data(progressive[..<lastScan] + Array(repeating: progressive[lastScan..<(progressive.count - 2)], count: 56).joined() + progressive.suffix(2))
        #expect(try commit(scans) == ServiceError.invalid("upload_id", "the photo has 65 scans, more than the limit of 64 (save it as a baseline JPEG)"))
        // Truncated: the header is whole, the scan is not.
        let whole = try Self.gradient(width: 300, height: 300)
        #expect(try commit(whole.prefix(whole.count / 2))?.message.contains("truncated or corrupt") == true)
        // Nothing was stored.
        #expect(f.error("profile.photo", #"{"size":512}"#, as: ann)?.code == .notFound)
    }

    @Test func uploadsAreBoundedInSizeAndNumberAndGuardRetries() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let id = try #require(try f.call("profile.photo.upload.begin", as: ann)["upload_id"] as? String)
        // 10 MiB at most, however it is cut: 20 chunks of 512 KiB, then one byte more.
        let chunk = Data(repeating: 0xFF, count: 512 * 1024).base64EncodedString()
        for index in 0..<20 {
            let reply = try f.call("profile.photo.upload.append", #"{"upload_id":"\#(id)","chunk":"\#(chunk)"}"#, as: ann)
            #expect(reply["bytes"] as? Int == (index + 1) * 512 * 1024)
        }
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(id)","chunk":"AA=="}"#, as: ann)
                == ServiceError(.tooLarge, "a photo may have at most 10485760 bytes", field: "chunk"))
        // A chunk over 512 KiB, and text that is not base64.
        let big = Data(count: 512 * 1024 + 1).base64EncodedString()
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(id)","chunk":"\#(big)"}"#, as: ann)?.field == "chunk")
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(id)","chunk":"***"}"#, as: ann)?.field == "chunk")

        // Offsets: a retried append is refused, not doubled.
        let retried = try #require(try f.call("profile.photo.upload.begin", as: ann)["upload_id"] as? String)
        #expect(try f.call("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":0,"chunk":"AAAA"}"#, as: ann)["bytes"] as? Int == 3)
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":0,"chunk":"AAAA"}"#, as: ann)
                == ServiceError(.conflict, "upload \(retried) holds 3 bytes, not 0", field: "offset"))
        #expect(try f.call("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":3,"chunk":"AAAA"}"#, as: ann)["bytes"] as? Int == 6)

        // An upload being committed (marked by the commit before it decodes) takes no chunk and no second commit.
        let claimed = try #require(try f.call("profile.photo.upload.begin", as: ben)["upload_id"] as? String)
        try Database(path: f.databasePath).run("UPDATE photo_uploads SET committed = 1 WHERE id = ?", claimed)
        let committed = ServiceError(.conflict, "upload \(claimed) is committed already", field: "upload_id")
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(claimed)","chunk":"AAAA"}"#, as: ben) == committed)
        #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(claimed)"}"#, as: ben) == committed)

        // Another user's upload is an unknown one to them, for every step.
        let unknown = ServiceError(.notFound, "no upload '\(retried)' (uploads expire 10 minutes after they begin)", field: "upload_id")
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":6,"chunk":"AAAA"}"#, as: ben) == unknown)
        #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(retried)"}"#, as: ben) == unknown)

        // Three open uploads a user: the fourth is refused; ben may still begin his second.
        _ = try f.call("profile.photo.upload.begin", as: ann)
        #expect(f.error("profile.photo.upload.begin", as: ann)
                == ServiceError(.rateLimited, "you have 3 uploads open, the most: use one with profile.photo.upload.commit, or wait 10 minutes for them to expire"))
        _ = try f.call("profile.photo.upload.begin", as: ben)

        // Ten minutes on, they have expired: appending is not_found, and ann may begin again.
        f.clock.advance(599)
        #expect(try f.call("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":6,"chunk":"AAAA"}"#, as: ann)["bytes"] as? Int == 9)
        f.clock.advance(2)
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(retried)","offset":6,"chunk":"AAAA"}"#, as: ann) == unknown)
        _ = try f.call("profile.photo.upload.begin", as: ann)
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_uploads") == 1)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_upload_chunks") == 0)
    }

    @Test func atMost64UploadsAreOpenInAll() throws {
        let f = try SocialFixture()
        var refused: ServiceError?
        for index in 0..<22 {
            let user = try f.register("user\(index)")
            for _ in 0..<3 where refused == nil { refused = f.error("profile.photo.upload.begin", as: user) }
        }
        #expect(refused == ServiceError(.rateLimited, "64 uploads are open: use them with profile.photo.upload.commit, or wait 10 minutes for them to expire"))
        // They expire 10 minutes after they began, not an hour: the cap frees itself soon.
        f.clock.advance(601)
        #expect(try f.call("profile.photo.upload.begin", as: try f.register("late"))["upload_id"] as? String != nil)
    }

    /// Many accounts holding every slot keep no one out for long: with all 64 open, a user
    /// holding fewer than the one who holds the most takes that one's upload idle longest (5 s
    /// or more without a chunk of 64 KiB); an upload in progress keeps its slot; and how fast slots can
    /// change hands is bounded by each user's 20 uploads begun in 10 minutes.
    @Test func aFullSetOfSlotsGivesAnIdleOneToAUserWithFewer() throws {
        let f = try SocialFixture()
        var held: [(user: Int64, ids: [String])] = []
        for index in 0..<21 {
            let user = try f.register("holder\(index)")
            held.append((user, try (0..<3).map { _ in try #require(try f.call("profile.photo.upload.begin", as: user)["upload_id"] as? String) }))
        }
        let last = try f.register("last")
        _ = try f.call("profile.photo.upload.begin", as: last)
        let full = ServiceError(.rateLimited, "64 uploads are open: use them with profile.photo.upload.commit, or wait 10 minutes for them to expire")
        // Within 5 s of the last chunk of every upload, none is taken: a newcomer is refused.
        let victim = try f.register("victim")
        #expect(f.error("profile.photo.upload.begin", as: victim) == full)
        // The first holder's first upload is idle longest; the second's first is in progress.
        // A chunk of 64 KiB keeps an upload in progress; a smaller one (a byte now and then) does not.
        f.clock.advance(30)
        let chunk = Data(count: 65_536).base64EncodedString()
        _ = try f.call("profile.photo.upload.append", #"{"upload_id":"\#(held[0].ids[0])","chunk":"\#(chunk)"}"#, as: held[0].user)
        _ = try f.call("profile.photo.upload.append", #"{"upload_id":"\#(held[0].ids[1])","chunk":"/9j/"}"#, as: held[0].user)
        let mine = try #require(try f.call("profile.photo.upload.begin", as: victim)["upload_id"] as? String)
        let gone = ServiceError(.notFound, "no upload '\(held[0].ids[1])' (uploads expire 10 minutes after they begin)", field: "upload_id")
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"\#(held[0].ids[1])","chunk":"/9j/"}"#, as: held[0].user) == gone)
        #expect(try f.call("profile.photo.upload.append", #"{"upload_id":"\#(held[0].ids[0])","chunk":"/9j/"}"#, as: held[0].user)["bytes"] as? Int == 65_539)
        #expect(try f.count("photo_uploads") == 64)
        #expect(try f.call("profile.photo.upload.append", #"{"upload_id":"\#(mine)","chunk":"/9j/"}"#, as: victim)["bytes"] as? Int == 3)
        // A user who holds as many as the most takes nothing.
        #expect(f.error("profile.photo.upload.begin", as: held[1].user) == full)
        #expect(try f.count("photo_uploads", "user_id = ?", held[1].user) == 3)
        // Twenty begins from one address in 10 minutes, the most, whatever the accounts and
        // whether they were refused; another address begins as before.
        f.clock.advance(700)
        let address = "198.51.100.7"
        for index in 0..<20 {
            let user = try f.register("busy\(index)")
            let id = try #require(try f.call("profile.photo.upload.begin", as: user, client: address)["upload_id"] as? String)
            try Database(path: f.databasePath).run("DELETE FROM photo_uploads WHERE id = ?", id)
        }
        let busy = try f.register("busy")
        #expect(f.error("profile.photo.upload.begin", as: busy, client: address)
                == ServiceError(.rateLimited, "at most 20 photo uploads begun from your address in 10 minutes: try again later"))
        #expect(try f.call("profile.photo.upload.begin", as: busy, client: "198.51.100.8")["upload_id"] != nil)
        // Without an address (a caller on the bus), the user is counted.
        for _ in 0..<19 {
            let id = try #require(try f.call("profile.photo.upload.begin", as: busy)["upload_id"] as? String)
            try Database(path: f.databasePath).run("DELETE FROM photo_uploads WHERE id = ?", id)
        }
        _ = try f.call("profile.photo.upload.begin", as: busy)
        #expect(f.error("profile.photo.upload.begin", as: busy)
                == ServiceError(.rateLimited, "at most 20 photo uploads begun from your address in 10 minutes: try again later"))
    }

    /// Photo commits decode on their own gate, never on the slot the password hashes need:
    /// the attack had two accounts commit photos back to back while a third logged in, and 8
    /// of 9 logins were `unavailable`, `busy checking other passwords`.
    @Test func loginsKeepWorkingWhilePhotosAreCommitted() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try f.register("vic")
        let jpeg = try #require(RGBImage(width: 6_000, height: 4_000, pixels: [UInt8](repeating: 90, count: 6_000 * 4_000 * 3))).jpeg()
        let ids = try [ann, ben, ann, ben, ann, ben].map { user in (user, try Self.upload(f, jpeg, as: user)) }
        let endpoints = f.runtime.endpoints.rpc, context = f.context
        let finished = Atomic<Bool>(false)
        let commitErrors = Mutex<[String]>([])
        let done = DispatchSemaphore(value: 0)
        DispatchQueue.global().async {
            defer { finished.store(true, ordering: .sequentiallyConsistent); done.signal() }
            do {
                let client = try RPCClient(context: context, endpoints: endpoints, logger: quiet)
                defer { client.close() }
                for (user, id) in ids {
                    do {
                        _ = try client.request(type: "profile.photo.upload.commit", body: Data(#"{"upload_id":"\#(id)"}"#.utf8),
                                               auth: Auth(userId: String(user), role: "user"), timeoutMilliseconds: 10_000)
                    } catch { commitErrors.withLock { $0.append("\(error)") } }
                }
            } catch { commitErrors.withLock { $0.append("\(error)") } }
        }
        var logins = 0, failures: [String] = []
        while !finished.load(ordering: .sequentiallyConsistent) {
            do { _ = try f.login("vic") } catch { failures.append(error.description) }
            logins += 1
        }
        #expect(done.wait(timeout: .now() + 30) == .success)
        #expect(commitErrors.withLock { $0 } == [])
        #expect(logins >= 5)
        #expect(failures == [])
    }

    /// Each commit decodes an image: at most 10 an hour per user (`rate_limited`); the refused
    /// commit leaves its upload as it was, and an hour on commits go again.
    @Test func aUserCommitsAtMost10PhotosAnHour() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        let jpeg = try Self.solid(60, side: 64)
        let first = try Self.upload(f, jpeg, as: ann)
        try f.call("profile.photo.upload.commit", #"{"upload_id":"\#(first)"}"#, as: ann)
        // An upload used by a commit is gone: committing it again is not_found (social.md).
        #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(first)"}"#, as: ann)
                == ServiceError(.notFound, "no upload '\(first)' (uploads expire 10 minutes after they begin)", field: "upload_id"))
        for _ in 1..<10 { try Self.setPhoto(f, jpeg, as: ann) }
        let id = try Self.upload(f, jpeg, as: ann)
        #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(id)"}"#, as: ann)
                == ServiceError(.rateLimited, "at most 10 photo commits an hour: try again later"))
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT committed FROM photo_uploads WHERE id = ?", id) == 0)
        // Ben has his own budget.
        try Self.setPhoto(f, jpeg, as: ben)
        f.clock.advance(3_601)
        try Self.setPhoto(f, jpeg, as: ann)
    }

    /// A commit that fails after it claimed the upload, for whatever reason (here the store
    /// refuses the photo), deletes the upload: it does not hold one of the user's 3 slots.
    @Test func aCommitThatFailsForAnyReasonDeletesItsUpload() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        let db = try Database(path: f.databasePath)
        try db.run("CREATE TRIGGER refuse_photos BEFORE INSERT ON photos BEGIN SELECT RAISE(ABORT, 'no photos today'); END")
        for _ in 0..<4 {
            let id = try Self.upload(f, try Self.solid(80, side: 64), as: ann)
            #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"\#(id)"}"#, as: ann) != nil)
            #expect(try db.scalarInt("SELECT count(*) FROM photo_uploads WHERE id = ?", id) == 0)
        }
        #expect(try db.scalarInt("SELECT count(*) FROM photo_upload_chunks") == 0)
    }

    /// The decode is budgeted: an image over 4:1 is refused before decoding (a 65500×610
    /// progressive file took 320 MB), as is a progressive one over 8 megapixels; 4:1 passes.
    @Test func elongatedAndLargeProgressivePhotosAreRefused() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        func commit(_ data: Data) throws -> ServiceError? {
            f.error("profile.photo.upload.commit", #"{"upload_id":"\#(try Self.upload(f, data, as: ann))"}"#, as: ann)
        }
        let long = try #require(RGBImage(width: 2_001, height: 500, pixels: [UInt8](repeating: 70, count: 2_001 * 500 * 3))).jpeg()
        #expect(try commit(long) == ServiceError.invalid("upload_id", "the photo is 2001×500, more elongated than 4:1: crop it"))
        let tall = try #require(RGBImage(width: 100, height: 401, pixels: [UInt8](repeating: 70, count: 100 * 401 * 3))).jpeg()
        #expect(try commit(tall) == ServiceError.invalid("upload_id", "the photo is 100×401, more elongated than 4:1: crop it"))
        let fourToOne = try #require(RGBImage(width: 2_000, height: 500, pixels: [UInt8](repeating: 70, count: 2_000 * 500 * 3))).jpeg()
        #expect(try commit(fourToOne) == nil)
        let side = 2_900  // 8,410,000 pixels
        let progressive = try [UInt8](repeating: 90, count: side * side * 3).withUnsafeBufferPointer { buffer in
            try TurboJPEGEncoder().encode(buffer, offset: 0, width: side, rowBytes: side * 3, height: side, quality: 80, subsampling: 0, progressive: true)
        }
        #expect(try commit(progressive) == ServiceError(.tooLarge,
            "the photo is a progressive or multi-scan JPEG of 2900×2900 = 8410000 pixels, more than the limit of 8000000 for such files (save it as a baseline JPEG or smaller)",
            field: "upload_id"))
        // Three bytes of a JPEG's start are not a complete JPEG.
        #expect(try commit(Data([0xFF, 0xD8, 0xFF])) == ServiceError.invalid("upload_id", "the photo is not a complete JPEG file (it ends before its frame header)"))
    }

    @Test func anonymousCallersUnknownUsersAndBadSizes() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann")
        try Self.setPhoto(f, try Self.solid(200), as: ann)
        for type in ["profile.photo.upload.begin", "profile.photo.delete"] {
            #expect(f.error(type) == ServiceError(.unauthenticated, "\(type) needs a signed-in user"))
        }
        #expect(f.error("profile.photo.upload.append", #"{"upload_id":"x","chunk":"AAAA"}"#)?.code == .unauthenticated)
        #expect(f.error("profile.photo.upload.commit", #"{"upload_id":"x"}"#)?.code == .unauthenticated)
        #expect(f.error("profile.photo", #"{"size":512}"#) == ServiceError(.unauthenticated, "profile.photo needs a user_id or a signed-in user"))
        #expect(f.error("profile.photo", #"{"user_id":99,"size":512}"#) == ServiceError(.notFound, "no user with id 99", field: "user_id"))
        #expect(f.error("profile.photo", #"{"user_id":\#(ann),"size":200}"#) == ServiceError.invalid("size", "must be 512 or 96"))
        #expect(f.error("profile.photo", #"{"user_id":\#(ann)}"#)?.field == "size")
        // Anyone may see it, as anyone sees the profile.
        #expect(try JPEGImage.check(try Self.photo(f, of: ann, size: 512, as: nil).jpeg).width == 512)
        // Deleting nothing of an unknown caller.
        #expect(f.error("profile.photo.delete", as: 99)?.code == .unauthenticated)
    }

    @Test func aBlockHidesThePhotoFromTheBlockerAsItHidesTheProfile() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben"), cat = try f.register("cat")
        try Self.setPhoto(f, try Self.solid(100), as: ann)
        try Self.setPhoto(f, try Self.solid(150), as: ben)
        try f.call("social.block", #"{"user_id":\#(ann)}"#, as: ben)
        let hidden = ServiceError(.notFound, "no user with id \(ann)", field: "user_id")
        #expect(f.error("profile.photo", #"{"user_id":\#(ann),"size":512}"#, as: ben) == hidden)
        #expect(f.error("profile.get", #"{"user_id":\#(ann)}"#, as: ben) == hidden)
        // Ann, whom Ben blocks, sees his photo as anyone does: the block is not told.
        #expect(try JPEGImage.check(try Self.photo(f, of: ben, size: 96, as: ann).jpeg).width == 96)
        // Anyone else, and each their own, still see them.
        #expect(try JPEGImage.check(try Self.photo(f, of: ann, size: 96, as: cat).jpeg).width == 96)
        #expect(try JPEGImage.check(try Self.photo(f, of: ben, size: 96, as: ben).jpeg).width == 96)
        try f.call("social.unblock", #"{"user_id":\#(ann)}"#, as: ben)
        #expect(try JPEGImage.check(try Self.photo(f, of: ann, size: 512, as: ben).jpeg).width == 512)
    }

    @Test func deletingTheAccountRemovesThePhotoAndOpenUploads() throws {
        let f = try SocialFixture()
        let ann = try f.register("ann"), ben = try f.register("ben")
        try Self.setPhoto(f, try Self.solid(100), as: ann)
        try Self.setPhoto(f, try Self.solid(150), as: ben)
        _ = try Self.upload(f, try Self.solid(50), as: ann)
        try f.call("auth.delete", #"{"password":"\#(SocialFixture.password)"}"#, as: ann)
        let db = try Database(path: f.databasePath)
        #expect(try db.scalarInt("SELECT count(*) FROM photos WHERE user_id = ?", ann) == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_uploads WHERE user_id = ?", ann) == 0)
        #expect(try db.scalarInt("SELECT count(*) FROM photo_upload_chunks") == 0)
        #expect(f.error("profile.photo", #"{"user_id":\#(ann),"size":96}"#, as: ben)?.code == .notFound)
        // Ben's stays.
        #expect(try JPEGImage.check(try Self.photo(f, of: ben, size: 96, as: nil).jpeg).width == 96)
    }
}
