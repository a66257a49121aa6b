//! Word forms the stemmer does not fold, and groups of words that mean the same thing.
//!
//! Three small tables, written from general English (dictionaries and style guides), not from
//! any evaluation set:
//!
//! - **Irregular forms** (`children` → `child`, `bought` → `buy`, `written` → `write`): Porter
//!   removes regular endings only.
//! - **British spellings** (`colour` → `color`, `catalogue` → `catalog`, and `-ise`/`-isation`
//!   verbs → `-ize`, with the words that are spelt `-ise` everywhere left alone): a skill
//!   written in one spelling meets a message written in the other.
//! - **Synonym groups** (`film` · `movie` · `cinema`): words of one group share a *concept* term
//!   besides their own, which the index weights low (a shared concept is weaker evidence than a
//!   shared word). A word is in one group at most; words with several common senses (`book`,
//!   `track`, `stock` as goods) are left out of the groups where they would mislead.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::LazyLock;

use super::stem::stem_into;

/// The base form of a lowercase word when it is an irregular form or a British spelling;
/// `None` when the word is its own base.
pub(crate) fn base_form(word: &str) -> Option<Cow<'static, str>> {
    static TABLE: LazyLock<HashMap<&'static str, &'static str>> =
        LazyLock::new(|| IRREGULAR.iter().chain(BRITISH).copied().collect());
    if let Some(base) = TABLE.get(word) {
        return Some(Cow::Borrowed(base));
    }
    ize(word).map(Cow::Owned)
}

/// `organise` → `organize`, `organisation` → `organization`, `optimising` → `optimizing`: the
/// `-is-` of a verb ending, written `-iz-`, unless the word is one of those spelt `-ise`
/// everywhere (`advise`, `exercise`, `promise`, `surprise`, …).
fn ize(word: &str) -> Option<String> {
    const ENDINGS: &[&str] = &[
        "isations", "isation", "ising", "ised", "ises", "isers", "iser", "ise",
    ];
    if !word.is_ascii() {
        return None;
    }
    let ending = ENDINGS.iter().find(|e| word.ends_with(*e))?;
    let root = &word[..word.len() - ending.len()];
    // Short roots are not verbs in -ise ("rise", "wise", "noise", "poise").
    if root.len() < 4 {
        return None;
    }
    let verb = format!("{root}ise");
    // `wise` ends many words (`otherwise`, `clockwise`); any other entry is matched whole, as
    // `arise` would end `summarise` and `anise` would end `organise`.
    if ALWAYS_ISE.binary_search(&verb.as_str()).is_ok() || verb.ends_with("wise") {
        return None;
    }
    Some(format!("{root}iz{}", &ending[2..]))
}

/// The concept of a stemmed word: the position of its synonym group.
pub(crate) fn concept(stem: &str) -> Option<u16> {
    static MAP: LazyLock<HashMap<String, u16>> = LazyLock::new(|| {
        let mut map = HashMap::new();
        let mut scratch = Vec::new();
        for (id, group) in SYNONYMS.iter().enumerate() {
            let id = u16::try_from(id).expect("fewer than 2^16 synonym groups");
            for word in *group {
                let base = base_form(word);
                let stemmed = stem_into(base.as_deref().unwrap_or(word), &mut scratch);
                map.entry(stemmed.to_string()).or_insert(id);
            }
        }
        map
    });
    MAP.get(stem).copied()
}

/// Irregular plurals and past forms, lowercase → base. Forms that are also common words of
/// another meaning (`saw`, `left`, `lay`, `found` as "to found") are left out, except where the
/// other meaning is rare in requests.
const IRREGULAR: &[(&str, &str)] = &[
    ("children", "child"),
    ("men", "man"),
    ("women", "woman"),
    ("people", "person"),
    ("mice", "mouse"),
    ("feet", "foot"),
    ("teeth", "tooth"),
    ("geese", "goose"),
    ("lives", "life"),
    ("knives", "knife"),
    ("wives", "wife"),
    ("leaves", "leaf"),
    ("halves", "half"),
    ("shelves", "shelf"),
    ("wolves", "wolf"),
    ("analyses", "analysis"),
    ("indices", "index"),
    ("criteria", "criterion"),
    ("phenomena", "phenomenon"),
    ("bought", "buy"),
    ("brought", "bring"),
    ("thought", "think"),
    ("taught", "teach"),
    ("caught", "catch"),
    ("sought", "seek"),
    ("found", "find"),
    ("made", "make"),
    ("took", "take"),
    ("taken", "take"),
    ("went", "go"),
    ("gone", "go"),
    ("ran", "run"),
    ("wrote", "write"),
    ("written", "write"),
    ("spoke", "speak"),
    ("spoken", "speak"),
    ("drove", "drive"),
    ("driven", "drive"),
    ("ate", "eat"),
    ("eaten", "eat"),
    ("gave", "give"),
    ("given", "give"),
    ("seen", "see"),
    ("knew", "know"),
    ("known", "know"),
    ("grew", "grow"),
    ("grown", "grow"),
    ("drew", "draw"),
    ("drawn", "draw"),
    ("chose", "choose"),
    ("chosen", "choose"),
    ("began", "begin"),
    ("begun", "begin"),
    ("sang", "sing"),
    ("sung", "sing"),
    ("paid", "pay"),
    ("said", "say"),
    ("sold", "sell"),
    ("told", "tell"),
    ("sent", "send"),
    ("spent", "spend"),
    ("built", "build"),
    ("felt", "feel"),
    ("kept", "keep"),
    ("lost", "lose"),
    ("meant", "mean"),
    ("met", "meet"),
    ("slept", "sleep"),
    ("stood", "stand"),
    ("understood", "understand"),
    ("won", "win"),
    ("flew", "fly"),
    ("flown", "fly"),
    ("hidden", "hide"),
    ("broke", "break"),
    ("broken", "break"),
    ("froze", "freeze"),
    ("frozen", "freeze"),
    ("stolen", "steal"),
    ("forgot", "forget"),
    ("forgotten", "forget"),
];

/// British spellings, lowercase → American (the `-ise` verbs are a rule, [`ize`]).
const BRITISH: &[(&str, &str)] = &[
    ("colour", "color"),
    ("colours", "colors"),
    ("coloured", "colored"),
    ("colouring", "coloring"),
    ("flavour", "flavor"),
    ("flavours", "flavors"),
    ("behaviour", "behavior"),
    ("behaviours", "behaviors"),
    ("favour", "favor"),
    ("favourite", "favorite"),
    ("favourites", "favorites"),
    ("honour", "honor"),
    ("labour", "labor"),
    ("neighbour", "neighbor"),
    ("neighbours", "neighbors"),
    ("neighbourhood", "neighborhood"),
    ("humour", "humor"),
    ("harbour", "harbor"),
    ("rumour", "rumor"),
    ("odour", "odor"),
    ("endeavour", "endeavor"),
    ("centre", "center"),
    ("centres", "centers"),
    ("theatre", "theater"),
    ("theatres", "theaters"),
    ("metre", "meter"),
    ("metres", "meters"),
    ("litre", "liter"),
    ("litres", "liters"),
    ("fibre", "fiber"),
    ("catalogue", "catalog"),
    ("catalogues", "catalogs"),
    ("dialogue", "dialog"),
    ("programme", "program"),
    ("programmes", "programs"),
    ("licence", "license"),
    ("defence", "defense"),
    ("offence", "offense"),
    ("practise", "practice"),
    ("travelling", "traveling"),
    ("travelled", "traveled"),
    ("traveller", "traveler"),
    ("travellers", "travelers"),
    ("cancelled", "canceled"),
    ("cancelling", "canceling"),
    ("modelling", "modeling"),
    ("labelled", "labeled"),
    ("labelling", "labeling"),
    ("jewellery", "jewelry"),
    ("grey", "gray"),
    ("tyre", "tire"),
    ("tyres", "tires"),
    ("aluminium", "aluminum"),
    ("maths", "math"),
    ("cosy", "cozy"),
    ("ageing", "aging"),
    ("enrol", "enroll"),
    ("fulfil", "fulfill"),
    ("doughnut", "donut"),
    ("pyjamas", "pajamas"),
    ("aeroplane", "airplane"),
    ("manoeuvre", "maneuver"),
    ("paediatric", "pediatric"),
    ("paediatrician", "pediatrician"),
    ("anaemia", "anemia"),
    ("encyclopaedia", "encyclopedia"),
    ("mum", "mom"),
];

/// Verbs and nouns spelt `-ise` in American English too, sorted (searched by bisection).
const ALWAYS_ISE: &[&str] = &[
    "advertise",
    "advise",
    "appraise",
    "arise",
    "braise",
    "bruise",
    "chastise",
    "circumcise",
    "comprise",
    "compromise",
    "concise",
    "cruise",
    "demise",
    "despise",
    "devise",
    "disguise",
    "enfranchise",
    "enterprise",
    "excise",
    "exercise",
    "expertise",
    "franchise",
    "improvise",
    "incise",
    "merchandise",
    "mortise",
    "noise",
    "paradise",
    "poise",
    "porpoise",
    "praise",
    "precise",
    "premise",
    "promise",
    "raise",
    "reprise",
    "revise",
    "supervise",
    "surmise",
    "surprise",
    "televise",
    "tortoise",
    "treatise",
    "valise",
    "wise",
];

/// Groups of words with one meaning in requests. Written from general English; a word belongs
/// to the first group that names it.
const SYNONYMS: &[&[&str]] = &[
    &["buy", "purchase", "acquire"],
    &["price", "cost", "fee", "fare", "pricing"],
    &["cheap", "inexpensive", "affordable", "budget"],
    &["car", "vehicle", "automobile", "auto"],
    &["film", "movie", "cinema"],
    &["picture", "image", "photo", "photograph", "pic"],
    &["song", "music", "tune", "melody"],
    &["job", "career", "employment", "vacancy", "occupation"],
    &["home", "house", "apartment", "flat", "housing"],
    &["trip", "travel", "journey", "vacation", "holiday", "tour"],
    &["hotel", "accommodation", "lodging", "hostel", "motel"],
    &["flight", "airline", "airfare", "plane", "airplane"],
    &["food", "meal", "dish", "cuisine"],
    &["recipe", "cook", "cooking", "bake", "baking"],
    &["restaurant", "eatery", "diner", "dining"],
    &["doctor", "physician", "clinician"],
    &["illness", "disease", "sickness", "ailment", "condition"],
    &["medicine", "medication", "drug", "pharmacy", "prescription"],
    &["exercise", "workout", "fitness", "gym"],
    &["diet", "nutrition", "nutritional", "calorie"],
    &["weather", "forecast"],
    &["news", "headline", "headlines"],
    &["book", "novel", "ebook"],
    &[
        "learn",
        "study",
        "course",
        "lesson",
        "tutorial",
        "education",
    ],
    &["teach", "tutor", "teacher", "instructor"],
    &["child", "kid", "toddler", "infant"],
    &["money", "cash", "fund", "finance", "financial"],
    &["invest", "investment", "investor", "portfolio", "equity"],
    &["crypto", "cryptocurrency", "bitcoin", "blockchain"],
    &["loan", "mortgage", "credit", "lending"],
    &["law", "legal", "lawyer", "attorney"],
    &["email", "mail", "inbox"],
    &["message", "chat", "sms", "messaging"],
    &["phone", "telephone", "smartphone", "mobile"],
    &["translate", "translation", "translator"],
    &["write", "compose", "draft"],
    &["summary", "summarize", "recap", "tldr", "abstract"],
    &["fix", "repair", "troubleshoot"],
    &["error", "bug", "fault", "glitch", "failure"],
    &["code", "coding", "programming", "developer"],
    &["website", "webpage", "site"],
    &["search", "find", "lookup", "locate", "discover"],
    &["display", "show", "present"],
    &["create", "generate", "produce"],
    &["edit", "modify", "revise", "alter"],
    &["delete", "remove", "erase"],
    &["convert", "transform", "conversion"],
    &["calculate", "compute", "calculator", "calculation"],
    &["compare", "comparison", "versus", "vs"],
    &[
        "recommend",
        "suggest",
        "recommendation",
        "suggestion",
        "advice",
        "advise",
    ],
    &["schedule", "calendar", "agenda", "appointment"],
    &["event", "concert", "festival"],
    &["ticket", "booking", "reservation", "reserve"],
    &["game", "gaming", "videogame"],
    &["football", "soccer"],
    &["clothes", "clothing", "apparel", "outfit", "garment"],
    &["shoe", "sneaker", "footwear"],
    &["gift", "giftcard"],
    &["store", "shop", "retailer", "marketplace", "shopping"],
    &["discount", "coupon", "deal", "promo", "voucher", "bargain"],
    &["review", "rating", "feedback", "testimonial"],
    &["route", "direction", "navigation", "navigate", "map"],
    &["location", "place", "address", "venue"],
    &["city", "town"],
    &["country", "nation"],
    &["resume", "cv"],
    &["hire", "recruit", "recruitment", "recruiter", "hiring"],
    &["company", "business", "firm", "corporation", "enterprise"],
    &[
        "marketing",
        "advertise",
        "advertising",
        "advertisement",
        "ad",
    ],
    &["video", "clip", "footage"],
    &["audio", "sound"],
    &["speech", "voice", "dictation"],
    &["illustration", "artwork", "drawing", "sketch", "art"],
    &[
        "dictionary",
        "definition",
        "meaning",
        "vocabulary",
        "synonym",
    ],
    &["grammar", "spelling", "proofread", "typo"],
    &["quiz", "trivia"],
    &["answer", "reply", "respond", "response"],
    &["idea", "brainstorm", "inspiration"],
    &["story", "tale", "fiction", "narrative"],
    &["poem", "poetry", "verse"],
    &["joke", "humor", "funny", "comedy", "laugh"],
    &["stress", "anxiety", "therapy", "therapist", "mental"],
    &["sleep", "insomnia", "nap"],
    &["dating", "romance", "romantic", "relationship"],
    &["garden", "gardening", "plant"],
    &["furniture", "decor", "interior"],
    &["electricity", "power", "energy"],
    &["transit", "transport", "transportation", "commute"],
    &["delivery", "shipping", "courier", "parcel", "package"],
    &["document", "doc", "file"],
    &["spreadsheet", "excel", "sheet"],
    &["statistics", "stat", "metric"],
    &["analyze", "analysis", "analytics", "analyse"],
    &[
        "chart",
        "graph",
        "plot",
        "visualize",
        "visualization",
        "diagram",
    ],
    &["password", "credential", "login"],
    &["security", "secure", "protect", "protection", "safety"],
    &["virus", "malware", "antivirus"],
    &["bot", "chatbot", "assistant"],
    &["currency", "forex"],
    &["salary", "wage", "income", "earnings", "paycheck"],
    &["insurance", "insure", "coverage"],
    &["rent", "rental", "lease"],
    &["politics", "political", "election", "vote"],
    &["history", "historical"],
    &["science", "scientific"],
    &["drink", "beverage", "cocktail"],
    &["beauty", "makeup", "cosmetic", "skincare"],
    &["hair", "haircut", "hairstyle"],
    &["freelance", "freelancer", "contractor"],
    &["customer", "client", "buyer"],
    &["product", "item", "goods", "merchandise"],
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn irregular_and_british_forms_have_their_base() {
        for (word, want) in [
            ("children", "child"),
            ("written", "write"),
            ("colour", "color"),
            ("catalogue", "catalog"),
            ("organise", "organize"),
            ("organisation", "organization"),
            ("summarising", "summarizing"),
            ("optimised", "optimized"),
        ] {
            assert_eq!(base_form(word).as_deref(), Some(want), "{word}");
        }
        // Spelt -ise everywhere, too short to be a verb in -ise, or already the base.
        for word in [
            "exercise",
            "advertise",
            "surprise",
            "promises",
            "televised",
            "rise",
            "noise",
            "wise",
            "otherwise",
            "organize",
            "child",
            "house",
        ] {
            assert_eq!(base_form(word), None, "{word}");
        }
    }

    #[test]
    fn synonyms_share_a_concept_and_others_do_not() {
        let mut s = Vec::new();
        let c = |w: &str, s: &mut Vec<u8>| concept(stem_into(w, s));
        assert!(c("movie", &mut s).is_some());
        assert_eq!(c("movies", &mut s), c("film", &mut s));
        assert_eq!(c("purchase", &mut s), c("buy", &mut s));
        assert_ne!(c("movie", &mut s), c("buy", &mut s));
        assert_eq!(c("zebra", &mut s), None);
    }

    #[test]
    fn tables_are_well_formed() {
        let mut sorted = ALWAYS_ISE.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, ALWAYS_ISE, "ALWAYS_ISE is searched by bisection");
        for (form, base) in IRREGULAR.iter().chain(BRITISH) {
            assert_ne!(form, base);
            assert!(form.bytes().all(|b| b.is_ascii_lowercase()), "{form}");
        }
        for group in SYNONYMS {
            assert!(group.len() >= 2, "{group:?}");
        }
    }
}
