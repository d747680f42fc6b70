import SearchService
import ServiceKit

ServiceRuntime.main(SearchService.definition())
