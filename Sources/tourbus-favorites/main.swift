import FavoritesService
import ServiceKit

ServiceRuntime.main(FavoritesService.definition())
