import Contracts

/// Russian and German names of the demo's 20 most popular places that are not events (by
/// `popularity`, ties by demo id) and of its four events, keyed by their demo external id; `DemoLoader` merges them into the places'
/// `name_i18n` (with the English name as `en`). Kept apart from `DemoData.sydneyPlacesJSON`
/// so that adding places there never touches these lines. The names are those used in
/// Russian and German guides and encyclopaedias; where German keeps the English name (as for
/// Circular Quay or Hyde Park), so does this table.
enum DemoTranslations {
    static let names: [String: (ru: String, de: String)] = [
        "syd-001": ("Сиднейский оперный театр", "Opernhaus Sydney"),
        "syd-087": ("Пляж Бонди", "Bondi Beach"),
        "syd-002": ("Мост Харбор-Бридж", "Sydney Harbour Bridge"),
        "syd-004": ("Зоопарк Таронга", "Taronga-Zoo"),
        "syd-065": ("Королевский ботанический сад Сиднея", "Königlicher Botanischer Garten Sydney"),
        "syd-042": ("Художественная галерея Нового Южного Уэльса", "Kunstgalerie von New South Wales"),
        "syd-094": ("Пляж Мэнли", "Strand von Manly"),
        "syd-233": ("Серкьюлар-Ки", "Circular Quay"),
        "syd-026": ("Дарлинг-Харбор", "Darling Harbour"),
        "syd-035": ("Бассейн «Бонди Айсбергс»", "Freibad Bondi Icebergs"),
        "syd-008": ("Сиднейская телебашня", "Sydney Tower (Aussichtsturm)"),
        "syd-003": ("Восхождение на мост Харбор-Бридж", "BridgeClimb: Besteigung der Harbour Bridge"),
        "syd-066": ("Гайд-парк", "Hyde Park"),
        "syd-100": ("Кресло миссис Маккуори", "Mrs Macquarie's Chair (Felsensitz)"),
        "syd-209": ("Здание королевы Виктории", "Queen Victoria Building"),
        "syd-005": ("Сиднейский аквариум SEA LIFE", "SEA LIFE Aquarium Sydney"),
        "syd-043": ("Музей современного искусства Австралии", "Museum für zeitgenössische Kunst Australiens"),
        "syd-068": ("Сентенниал-парк", "Centennial Park"),
        "syd-092": ("Пляж Куджи", "Strand von Coogee"),
        "syd-009": ("Луна-парк Сиднея", "Vergnügungspark Luna Park Sydney"),
        // The demo's events, most of them among the most popular places.
        "syd-243": ("Сиднейский фестиваль", "Sydney Festival"),
        "syd-244": ("Королевская пасхальная выставка в Сиднее", "Sydney Royal Easter Show (Osterschau)"),
        "syd-245": ("Фестиваль света «Вивид Сидней»", "Lichterfestival Vivid Sydney"),
        "syd-246": ("Новогодний фейерверк в Сиднее", "Silvesterfeuerwerk in Sydney"),
    ]

    /// `place` with its translations merged into `name_i18n` (its `name` as `en`), when it has any.
    static func merged(_ place: PlaceInput) -> PlaceInput {
        guard let id = place.externalIds?["demo"], let names = names[id] else { return place }
        var place = place
        var texts = place.nameI18n ?? [:]
        if let name = place.name { texts["en"] = texts["en"] ?? name }
        texts["ru"] = texts["ru"] ?? names.ru
        texts["de"] = texts["de"] ?? names.de
        place.nameI18n = texts
        return place
    }
}
