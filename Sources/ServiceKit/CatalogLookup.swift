import Bus
import Contracts
import Foundation

extension ServiceWorker {
    /// The one way a service asks the catalog about a place (`catalog.get`): within the time
    /// the request has left (at most 1 s, and 90 % of it, so the asking service still answers
    /// in time). `not_found` naming `field` when the catalog has no such place; `unavailable`
    /// when it does not answer in time (logged); its other refusals as it gave them. It asks
    /// for the request's client, so the catalog counts the call in that client's share.
    public func catalogPlace(_ id: Int64, field: String = "place_id", context: RequestContext) throws(ServiceError) -> Reply {
        do {
            let timeout = min(1_000, max(1, context.remainingMilliseconds * 9 / 10))
            return try peers.client("catalog").request(type: Methods.Catalog.get.name, body: Data(#"{"id":\#(id)}"#.utf8), client: context.client, timeoutMilliseconds: timeout)
        } catch  where error.code == .notFound {
            throw ServiceError(.notFound, "no place with id \(id)", field: field)
        } catch  where error.code == .unavailable || error.code == .deadlineExceeded {
            logger.warn("catalog did not answer", ["type": context.type, "error": error])
            throw ServiceError(.unavailable, "the catalog is not answering; try again")
        }
    }
}
