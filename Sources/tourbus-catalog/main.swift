import CatalogService
import ServiceKit

ServiceRuntime.main(CatalogService.definition)
