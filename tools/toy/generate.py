#!/usr/bin/python3
"""The toy English -> French language of models/toy-en-fr.

A small, consistent grammar whose translation needs attention: French puts
most adjectives after the noun and a few before it, agrees articles,
adjectives and past participles in gender and number, conjugates verbs by
person in three tenses (present, passé composé with avoir, future; "to be"
takes the imparfait in the past), wraps negation around the verb, elides
(j' l' n' qu' d') and contracts (au aux du des), and changes un/une/des to
de after a negation. Sentences may carry possessives, demonstratives,
numbers, prepositional phrases, adverbs, relative clauses (qui/que), "that"
clauses and clauses joined by and/but.

Text is lowercase and tokenized by spaces: the final "." is a token and
elided words are tokens of their own ("j' ai mangé", "l' homme"), so a
translation is its tokens joined with spaces. Every English sentence has
exactly one French translation.

Rerun (deterministic for a given --seed and sizes; about a minute and a half):

    /usr/bin/python3 tools/toy/generate.py

writes
    build/toy/train.en  build/toy/train.fr    training pairs (--train)
    build/toy/valid.en  build/toy/valid.fr    validation pairs (--valid)
    build/toy/vocab.en  build/toy/vocab.fr    vocabularies of the training data
    models/toy-en-fr/test.en  models/toy-en-fr/test.fr   test pairs (--test)

With --es it also writes train.es, valid.es, test.es and vocab.es: the same
sentences in the toy Spanish of tools/toy/spanish.py, made from the same
draws (the data of models/multi-en-fr-es); the English and French files
are the same with or without it.

Test, valid and train are the first --test, next --valid and next --train
distinct sentences drawn; then pairs holding French tokens seen fewer than
--min-count times in training are added to train, so that a rare form (an
irregular participle agreeing in an object relative, a future with vous)
has enough examples. No English sentence appears in two of the sets. A
vocabulary holds one token a line: <unk> <pad> <bos> <eos> (ids 0..3), then
the training tokens from the most to the least frequent (ties in
alphabetical order).
"""
import argparse
import collections
import os
import random
import sys

import spanish

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPECIALS = ["<unk>", "<pad>", "<bos>", "<eos>"]
MIN_TOKENS, MAX_TOKENS = 3, 25
# ted (like the tutorial's translate()) generates at most source tokens + 2
# (BOS, EOS) + 4 tokens, EOS included; French is kept within that bound.
MAX_EXTRA_TARGET = 4

# ---------------------------------------------------------------------------
# Lexicon
# ---------------------------------------------------------------------------

PERSON, ANIMAL, FOOD, THING, PLACE = "person", "animal", "food", "thing", "place"
ANIMATE = (PERSON, ANIMAL)


class Noun:
    def __init__(self, en, en_pl, fr, fr_pl, gender, cat):
        self.en, self.en_pl, self.fr, self.fr_pl = en, en_pl, fr, fr_pl
        self.gender, self.cat = gender, cat


def _nouns():
    rows = [
        # English singular/plural, French singular/plural, gender, category
        ("man", "men", "homme", "hommes", "m", PERSON),
        ("woman", "women", "femme", "femmes", "f", PERSON),
        ("boy", "boys", "garçon", "garçons", "m", PERSON),
        ("girl", "girls", "fille", "filles", "f", PERSON),
        ("child", "children", "enfant", "enfants", "m", PERSON),
        ("teacher", "teachers", "professeur", "professeurs", "m", PERSON),
        ("doctor", "doctors", "médecin", "médecins", "m", PERSON),
        ("student", "students", "étudiant", "étudiants", "m", PERSON),
        ("friend", "friends", "ami", "amis", "m", PERSON),
        ("king", "kings", "roi", "rois", "m", PERSON),
        ("queen", "queens", "reine", "reines", "f", PERSON),
        ("farmer", "farmers", "fermier", "fermiers", "m", PERSON),
        ("baker", "bakers", "boulanger", "boulangers", "m", PERSON),
        ("neighbor", "neighbors", "voisin", "voisins", "m", PERSON),
        ("sister", "sisters", "soeur", "soeurs", "f", PERSON),
        ("brother", "brothers", "frère", "frères", "m", PERSON),
        ("mother", "mothers", "mère", "mères", "f", PERSON),
        ("father", "fathers", "père", "pères", "m", PERSON),
        ("actress", "actresses", "actrice", "actrices", "f", PERSON),
        ("cat", "cats", "chat", "chats", "m", ANIMAL),
        ("dog", "dogs", "chien", "chiens", "m", ANIMAL),
        ("horse", "horses", "cheval", "chevaux", "m", ANIMAL),
        ("bird", "birds", "oiseau", "oiseaux", "m", ANIMAL),
        ("mouse", "mice", "souris", "souris", "f", ANIMAL),
        ("cow", "cows", "vache", "vaches", "f", ANIMAL),
        ("rabbit", "rabbits", "lapin", "lapins", "m", ANIMAL),
        ("duck", "ducks", "canard", "canards", "m", ANIMAL),
        ("elephant", "elephants", "éléphant", "éléphants", "m", ANIMAL),
        ("owl", "owls", "chouette", "chouettes", "f", ANIMAL),
        ("apple", "apples", "pomme", "pommes", "f", FOOD),
        ("cake", "cakes", "gâteau", "gâteaux", "m", FOOD),
        ("cheese", "cheeses", "fromage", "fromages", "m", FOOD),
        ("orange", "oranges", "orange", "oranges", "f", FOOD),
        ("egg", "eggs", "oeuf", "oeufs", "m", FOOD),
        ("pear", "pears", "poire", "poires", "f", FOOD),
        ("tomato", "tomatoes", "tomate", "tomates", "f", FOOD),
        ("carrot", "carrots", "carotte", "carottes", "f", FOOD),
        ("sandwich", "sandwiches", "sandwich", "sandwichs", "m", FOOD),
        ("book", "books", "livre", "livres", "m", THING),
        ("letter", "letters", "lettre", "lettres", "f", THING),
        ("car", "cars", "voiture", "voitures", "f", THING),
        ("table", "tables", "table", "tables", "f", THING),
        ("chair", "chairs", "chaise", "chaises", "f", THING),
        ("key", "keys", "clé", "clés", "f", THING),
        ("box", "boxes", "boîte", "boîtes", "f", THING),
        ("bag", "bags", "sac", "sacs", "m", THING),
        ("hat", "hats", "chapeau", "chapeaux", "m", THING),
        ("ball", "balls", "balle", "balles", "f", THING),
        ("painting", "paintings", "tableau", "tableaux", "m", THING),
        ("newspaper", "newspapers", "journal", "journaux", "m", THING),
        ("door", "doors", "porte", "portes", "f", THING),
        ("window", "windows", "fenêtre", "fenêtres", "f", THING),
        ("bed", "beds", "lit", "lits", "m", THING),
        ("cup", "cups", "tasse", "tasses", "f", THING),
        ("bottle", "bottles", "bouteille", "bouteilles", "f", THING),
        ("umbrella", "umbrellas", "parapluie", "parapluies", "m", THING),
        ("garden", "gardens", "jardin", "jardins", "m", PLACE),
        ("kitchen", "kitchens", "cuisine", "cuisines", "f", PLACE),
        ("school", "schools", "école", "écoles", "f", PLACE),
        ("park", "parks", "parc", "parcs", "m", PLACE),
        ("street", "streets", "rue", "rues", "f", PLACE),
        ("forest", "forests", "forêt", "forêts", "f", PLACE),
        ("room", "rooms", "chambre", "chambres", "f", PLACE),
        ("city", "cities", "ville", "villes", "f", PLACE),
        ("hotel", "hotels", "hôtel", "hôtels", "m", PLACE),
        ("tree", "trees", "arbre", "arbres", "m", PLACE),
        ("church", "churches", "église", "églises", "f", PLACE),
    ]
    return [Noun(*r) for r in rows]


NOUNS = _nouns()
NOUNS_BY_CAT = collections.defaultdict(list)
for _n in NOUNS:
    NOUNS_BY_CAT[_n.cat].append(_n)


class Adjective:
    def __init__(self, en, forms, before, cats, vowel_form=None):
        self.en = en
        self.forms = forms            # (m sg, f sg, m pl, f pl)
        self.before = before          # placed before the noun in French
        self.cats = cats
        self.vowel_form = vowel_form  # m sg before a vowel (bel, vieil, nouvel)

    def fr(self, gender, plural):
        return self.forms[(2 if plural else 0) + (1 if gender == "f" else 0)]


def _regular_adj(m, f=None, mpl=None, fpl=None):
    f = f or (m if m.endswith("e") else m + "e")
    mpl = mpl or (m if m[-1] in "sx" else m + "s")
    fpl = fpl or f + "s"
    return (m, f, mpl, fpl)


ALL = (PERSON, ANIMAL, FOOD, THING, PLACE)
ADJECTIVES = [
    # after the noun
    Adjective("black", _regular_adj("noir"), False, (ANIMAL, THING)),
    Adjective("white", _regular_adj("blanc", "blanche"), False, (ANIMAL, THING, PLACE)),
    Adjective("red", _regular_adj("rouge"), False, (FOOD, THING)),
    Adjective("green", _regular_adj("vert"), False, (FOOD, THING)),
    Adjective("blue", _regular_adj("bleu"), False, (THING,)),
    Adjective("yellow", _regular_adj("jaune"), False, (FOOD, THING, ANIMAL)),
    Adjective("gray", _regular_adj("gris", "grise"), False, (ANIMAL, THING)),
    Adjective("happy", _regular_adj("heureux", "heureuse"), False, ANIMATE),
    Adjective("sad", _regular_adj("triste"), False, ANIMATE),
    Adjective("tired", _regular_adj("fatigué"), False, ANIMATE),
    Adjective("hungry", _regular_adj("affamé"), False, ANIMATE),
    Adjective("lazy", _regular_adj("paresseux", "paresseuse"), False, ANIMATE),
    Adjective("brave", _regular_adj("courageux", "courageuse"), False, ANIMATE),
    Adjective("smart", _regular_adj("intelligent"), False, ANIMATE),
    Adjective("rich", _regular_adj("riche"), False, (PERSON,)),
    Adjective("famous", _regular_adj("célèbre"), False, (PERSON, PLACE, THING)),
    Adjective("noisy", _regular_adj("bruyant"), False, (PERSON, ANIMAL, PLACE)),
    Adjective("quiet", _regular_adj("calme"), False, (PERSON, ANIMAL, PLACE)),
    Adjective("clean", _regular_adj("propre"), False, (THING, PLACE)),
    Adjective("dirty", _regular_adj("sale"), False, (THING, PLACE, ANIMAL)),
    Adjective("heavy", _regular_adj("lourd"), False, (THING,)),
    Adjective("broken", _regular_adj("cassé"), False, (THING,)),
    Adjective("strange", _regular_adj("étrange"), False, ALL),
    Adjective("fresh", _regular_adj("frais", "fraîche"), False, (FOOD,)),
    Adjective("sweet", _regular_adj("sucré"), False, (FOOD,)),
    Adjective("round", _regular_adj("rond"), False, (FOOD, THING)),
    # before the noun
    Adjective("small", _regular_adj("petit"), True, ALL),
    Adjective("big", _regular_adj("grand"), True, ALL),
    Adjective("beautiful", ("beau", "belle", "beaux", "belles"), True, ALL, "bel"),
    Adjective("young", _regular_adj("jeune"), True, ANIMATE),
    Adjective("old", ("vieux", "vieille", "vieux", "vieilles"), True, ALL, "vieil"),
    Adjective("good", _regular_adj("bon", "bonne"), True, (PERSON, FOOD, THING, PLACE)),
    Adjective("new", ("nouveau", "nouvelle", "nouveaux", "nouvelles"), True,
              (PERSON, THING, PLACE), "nouvel"),
    Adjective("pretty", _regular_adj("joli"), True, ALL),
    Adjective("bad", _regular_adj("mauvais"), True, (PERSON, FOOD, THING)),
]
# Adjectives a predicate ("is ...") may take.
PREDICATE_ADJECTIVES = [a for a in ADJECTIVES if a.en not in ("good", "bad", "new")]


class Verb:
    """English (base, 3rd singular, past) and French (present by person
    je tu il nous vous ils, past participle, future stem)."""

    def __init__(self, en, fr_present, participle, future, kind, subj, obj=(), prep=""):
        self.en = en
        self.present = fr_present
        self.participle = participle
        self.future = future
        self.kind = kind    # intr, tr, ditr, comp
        self.subj = subj    # subject categories
        self.obj = obj      # object categories
        self.prep = prep    # English particle after the verb ("for", "to")


def _er(stem, nous=None):
    return [stem + "e", stem + "es", stem + "e", nous or stem + "ons", stem + "ez", stem + "ent"]


def _verb(en, fr, kind, subj, obj=(), prep=""):
    if isinstance(fr, str):  # a regular -er verb given by its infinitive
        stem = fr[:-2]
        nous = stem + "eons" if stem.endswith("g") else None
        return Verb(en, _er(stem, nous), stem + "é", fr, kind, subj, obj, prep)
    present, participle, future = fr
    return Verb(en, present, participle, future, kind, subj, obj, prep)


V_ANY = (PERSON, ANIMAL, FOOD, THING, PLACE)
VERBS = [
    _verb(("eat", "eats", "ate"), "manger", "tr", ANIMATE, (FOOD,)),
    _verb(("see", "sees", "saw"),
          (["vois", "vois", "voit", "voyons", "voyez", "voient"], "vu", "verr"),
          "tr", ANIMATE, V_ANY),
    _verb(("love", "loves", "loved"), "aimer", "tr", (PERSON,), ALL),
    _verb(("watch", "watches", "watched"), "regarder", "tr", ANIMATE, (PERSON, ANIMAL, THING)),
    _verb(("find", "finds", "found"), "trouver", "tr", ANIMATE, (ANIMAL, FOOD, THING)),
    _verb(("buy", "buys", "bought"),
          (["achète", "achètes", "achète", "achetons", "achetez", "achètent"], "acheté",
           "achèter"), "tr", (PERSON,), (FOOD, THING)),
    _verb(("carry", "carries", "carried"), "porter", "tr", (PERSON,), (FOOD, THING)),
    _verb(("wash", "washes", "washed"), "laver", "tr", (PERSON,), (ANIMAL, FOOD, THING)),
    _verb(("take", "takes", "took"),
          (["prends", "prends", "prend", "prenons", "prenez", "prennent"], "pris", "prendr"),
          "tr", (PERSON,), (FOOD, THING)),
    _verb(("cook", "cooks", "cooked"), "cuisiner", "tr", (PERSON,), (FOOD,)),
    _verb(("open", "opens", "opened"),
          (["ouvre", "ouvres", "ouvre", "ouvrons", "ouvrez", "ouvrent"], "ouvert", "ouvrir"),
          "tr", (PERSON,), (THING,)),
    _verb(("visit", "visits", "visited"), "visiter", "tr", (PERSON,), (PLACE,)),
    _verb(("follow", "follows", "followed"),
          (["suis", "suis", "suit", "suivons", "suivez", "suivent"], "suivi", "suivr"),
          "tr", ANIMATE, ANIMATE),
    _verb(("paint", "paints", "painted"),
          (["peins", "peins", "peint", "peignons", "peignez", "peignent"], "peint", "peindr"),
          "tr", (PERSON,), (THING, PLACE, ANIMAL)),
    _verb(("write", "writes", "wrote"),
          (["écris", "écris", "écrit", "écrivons", "écrivez", "écrivent"], "écrit", "écrir"),
          "tr", (PERSON,), (THING,)),
    _verb(("hear", "hears", "heard"),
          (["entends", "entends", "entend", "entendons", "entendez", "entendent"], "entendu",
           "entendr"), "tr", ANIMATE, ANIMATE),
    _verb(("look", "looks", "looked"), "chercher", "tr", ANIMATE, (PERSON, ANIMAL, FOOD, THING),
          "for"),
    _verb(("wait", "waits", "waited"),
          (["attends", "attends", "attend", "attendons", "attendez", "attendent"], "attendu",
           "attendr"), "tr", ANIMATE, ANIMATE, "for"),
    _verb(("listen", "listens", "listened"), "écouter", "tr", ANIMATE, (PERSON, ANIMAL), "to"),
    _verb(("clean", "cleans", "cleaned"),
          (["nettoie", "nettoies", "nettoie", "nettoyons", "nettoyez", "nettoient"], "nettoyé",
           "nettoier"), "tr", (PERSON,), (THING, PLACE)),
    _verb(("catch", "catches", "caught"), "attraper", "tr", ANIMATE, (ANIMAL, THING)),
    _verb(("forget", "forgets", "forgot"), "oublier", "tr", (PERSON,), (PERSON, THING)),
    _verb(("know", "knows", "knew"),
          (["connais", "connais", "connaît", "connaissons", "connaissez", "connaissent"], "connu",
           "connaîtr"), "tr", (PERSON,), (PERSON, PLACE)),
    _verb(("help", "helps", "helped"), "aider", "tr", (PERSON,), ANIMATE),
    _verb(("call", "calls", "called"),
          (["appelle", "appelles", "appelle", "appelons", "appelez", "appellent"], "appelé",
           "appeller"), "tr", (PERSON,), ANIMATE),
    _verb(("sleep", "sleeps", "slept"),
          (["dors", "dors", "dort", "dormons", "dormez", "dorment"], "dormi", "dormir"),
          "intr", ANIMATE),
    _verb(("walk", "walks", "walked"), "marcher", "intr", ANIMATE),
    _verb(("work", "works", "worked"), "travailler", "intr", (PERSON,)),
    _verb(("sing", "sings", "sang"), "chanter", "intr", (PERSON,)),
    _verb(("dance", "dances", "danced"), "danser", "intr", (PERSON,)),
    _verb(("play", "plays", "played"), "jouer", "intr", ANIMATE),
    _verb(("run", "runs", "ran"),
          (["cours", "cours", "court", "courons", "courez", "courent"], "couru", "courr"),
          "intr", ANIMATE),
    _verb(("laugh", "laughs", "laughed"),
          (["ris", "ris", "rit", "rions", "riez", "rient"], "ri", "rir"), "intr", (PERSON,)),
    _verb(("swim", "swims", "swam"), "nager", "intr", ANIMATE),
    _verb(("cry", "cries", "cried"), "pleurer", "intr", (PERSON,)),
    _verb(("give", "gives", "gave"), "donner", "ditr", (PERSON,), (FOOD, THING)),
    _verb(("show", "shows", "showed"), "montrer", "ditr", (PERSON,), (ANIMAL, FOOD, THING)),
    _verb(("sell", "sells", "sold"),
          (["vends", "vends", "vend", "vendons", "vendez", "vendent"], "vendu", "vendr"),
          "ditr", (PERSON,), (ANIMAL, FOOD, THING)),
    _verb(("bring", "brings", "brought"), "apporter", "ditr", (PERSON,), (FOOD, THING)),
    _verb(("send", "sends", "sent"),
          (["envoie", "envoies", "envoie", "envoyons", "envoyez", "envoient"], "envoyé",
           "enverr"), "ditr", (PERSON,), (THING,)),
    _verb(("think", "thinks", "thought"), "penser", "comp", (PERSON,)),
    _verb(("say", "says", "said"),
          (["dis", "dis", "dit", "disons", "dites", "disent"], "dit", "dir"), "comp", (PERSON,)),
    _verb(("know", "knows", "knew"),
          (["sais", "sais", "sait", "savons", "savez", "savent"], "su", "saur"), "comp",
          (PERSON,)),
    _verb(("hope", "hopes", "hoped"),
          (["espère", "espères", "espère", "espérons", "espérez", "espèrent"], "espéré",
           "espérer"), "comp", (PERSON,)),
]
VERBS_BY_KIND = collections.defaultdict(list)
for _v in VERBS:
    VERBS_BY_KIND[_v.kind].append(_v)

AVOIR = ["ai", "as", "a", "avons", "avez", "ont"]
ETRE = ["suis", "es", "est", "sommes", "êtes", "sont"]
ETRE_IMPARFAIT = ["étais", "étais", "était", "étions", "étiez", "étaient"]
FUTURE_ENDINGS = ["ai", "as", "a", "ons", "ez", "ont"]

# Subject pronouns: English, French, person index (0..5), gender.
# "you" is always vous, "they" always ils.
PRONOUNS = [("i", "je", 0, "m"), ("you", "vous", 4, "m"), ("he", "il", 2, "m"),
            ("she", "elle", 2, "f"), ("we", "nous", 3, "m"), ("they", "ils", 5, "m")]

POSSESSIVES = {  # English: French (m sg, f sg, pl)
    "my": ("mon", "ma", "mes"), "your": ("votre", "votre", "vos"),
    "his": ("son", "sa", "ses"), "her": ("son", "sa", "ses"),
    "our": ("notre", "notre", "nos"), "their": ("leur", "leur", "leurs"),
}
NUMBERS = [("two", "deux"), ("three", "trois"), ("four", "quatre"), ("five", "cinq")]

# Prepositions: English tokens, French tokens, categories of their object.
PREPOSITIONS = [
    (["in"], ["dans"], (PLACE, THING)),
    (["on"], ["sur"], {"table", "chair", "bed", "box", "car"}),
    (["under"], ["sous"], {"table", "chair", "bed", "car", "umbrella", "tree"}),
    (["near"], ["près", "de"], (THING, PLACE, PERSON, ANIMAL)),
    (["behind"], ["derrière"], (THING, PLACE, PERSON, ANIMAL)),
    (["in", "front", "of"], ["devant"], (THING, PLACE, PERSON, ANIMAL)),
    (["with"], ["avec"], (PERSON, ANIMAL)),
    (["without"], ["sans"], (PERSON, ANIMAL)),
]
CONTAINERS = {"box", "bag", "car", "cup", "bottle"}
# Verbs whose objects are a few nouns only.
OBJECTS = {"write": {"letter", "book"},
           "open": {"door", "window", "box", "bag", "letter", "book", "bottle", "car"},
           "send": {"letter", "book", "box", "painting", "newspaper", "key"}}

VOWELS = set("aeiouhéèêëàâîïôûœ")
ELISION = {"je": "j'", "le": "l'", "la": "l'", "ne": "n'", "que": "qu'", "de": "d'"}


def fr_vowel(word):
    return word[0] in VOWELS


def en_vowel(word):
    return word[0] in "aeiou"


# ---------------------------------------------------------------------------
# Phrases
# ---------------------------------------------------------------------------

class NP:
    """A noun phrase in the three languages, with what agreement needs
    (gender: the French noun's; es_gender: the Spanish noun's)."""

    def __init__(self, en, fr, gender, plural, person=None, indefinite=False, es=(),
                 es_gender=None, is_person=False):
        self.en, self.fr, self.es = en, fr, list(es)
        self.gender, self.plural = gender, plural
        self.es_gender = es_gender or gender
        self.person = person if person is not None else (5 if plural else 2)
        self.indefinite = indefinite  # un/une/des, which negation turns into de
        self.is_person = is_person    # a person: Spanish puts "a" before it as an object


def noun_phrase(rng, cats, det=None, plural=None, negated=False, adjectives=None, only=None):
    """A determiner, at most one adjective before and one after the noun in
    French (English: both before), and the noun: one of the categories
    `cats`, or of the English nouns `only`."""
    if only:
        noun = rng.choice([n for n in NOUNS if n.en in only])
        cat = noun.cat
    else:
        cat = rng.choice(cats)
        noun = rng.choice(NOUNS_BY_CAT[cat])
    if det is None:
        det = rng.choices(["def", "indef", "poss", "dem", "num"], [45, 25, 15, 8, 7])[0]
    if det == "num":
        plural = True
    elif plural is None:
        plural = rng.random() < 0.3
    if adjectives is None:
        adjectives = rng.choices([0, 1, 2], [50, 40, 10])[0]
    fitting = [a for a in ADJECTIVES if cat in a.cats]
    pre = post = None
    if adjectives:
        first = rng.choice(fitting)
        if first.before:
            pre = first
        else:
            post = first
        if adjectives == 2:
            others = [a for a in fitting if a.before != first.before]
            second = rng.choice(others)
            if second.before:
                pre = second
            else:
                post = second
    g = noun.gender
    n_en = noun.en_pl if plural else noun.en
    n_fr = noun.fr_pl if plural else noun.fr
    en_words = ([pre.en] if pre else []) + ([post.en] if post else []) + [n_en]
    fr_words = []
    if pre:
        form = pre.fr(g, plural)
        if pre.vowel_form and g == "m" and not plural and fr_vowel(n_fr):
            form = pre.vowel_form
        fr_words.append(form)
    fr_words.append(n_fr)
    if post:
        fr_words.append(post.fr(g, plural))
    nxt = fr_words[0]
    indefinite = False
    owner = en_num = None

    if det == "def":
        en_det = ["the"]
        fr_det = ["les" if plural else ("la" if g == "f" else "le")]
    elif det == "indef":
        indefinite = True
        if plural:
            en_det = []  # "cats" -> des chats
            fr_det = ["de" if (pre or negated) else "des"]
        else:
            en_det = ["an" if en_vowel(en_words[0]) else "a"]
            fr_det = ["de" if negated else ("une" if g == "f" else "un")]
    elif det == "dem":
        en_det = ["these" if plural else "this"]
        if plural:
            fr_det = ["ces"]
        elif g == "f":
            fr_det = ["cette"]
        else:
            fr_det = ["cet" if fr_vowel(nxt) else "ce"]
    elif det == "poss":
        owner = rng.choice(list(POSSESSIVES))
        m, f, pl = POSSESSIVES[owner]
        en_det = [owner]
        if plural:
            fr_det = [pl]
        elif g == "f" and not fr_vowel(nxt):
            fr_det = [f]
        else:
            fr_det = [m]
    else:
        en_num, fr_num = rng.choice(NUMBERS)
        en_det, fr_det = [en_num], [fr_num]
    es, es_gender = spanish.noun_phrase(noun.en, pre and pre.en, post and post.en, det,
                                        plural, owner, en_num)
    return NP(en_det + en_words, fr_det + fr_words, g, plural, indefinite=indefinite, es=es,
              es_gender=es_gender, is_person=cat == PERSON)


def pronoun(rng, allowed=None):
    options = [p for p in PRONOUNS if allowed is None or p[0] in allowed]
    en, fr, person, gender = rng.choice(options)
    return NP([en], [fr], gender, person >= 3, person=person, es=[spanish.PRONOUNS[en]])


def coordinated(rng, cats):
    a = noun_phrase(rng, cats, det=rng.choice(["def", "poss"]), adjectives=0)
    b = a
    while b.en[-1] == a.en[-1]:
        b = noun_phrase(rng, cats, det=rng.choice(["def", "poss"]), adjectives=0)
    gender = "f" if a.gender == b.gender == "f" else "m"
    es_gender = "f" if a.es_gender == b.es_gender == "f" else "m"
    return NP(a.en + ["and"] + b.en, a.fr + ["et"] + b.fr, gender, True,
              es=a.es + ["y"] + b.es, es_gender=es_gender)


def agree_participle(participle, gender, plural):
    form = participle + ("e" if gender == "f" else "")
    if plural and not form.endswith("s"):
        form += "s"
    return form


class VerbGroup:
    """English and French verb groups of a clause: tense, negation
    (not / never) and an optional frequency adverb."""

    def __init__(self, tense, negation, adverb):
        self.tense = tense          # pres, past, fut
        self.negation = negation    # None, "not", "never"
        self.adverb = adverb        # None or (English, French)

    def english(self, verb, person):
        base, third, past = verb.en
        third_sg = person == 2
        words = []
        if self.negation == "never":
            if self.tense == "pres":
                words = ["never", third if third_sg else base]
            elif self.tense == "past":
                words = ["never", past]
            else:
                words = ["will", "never", base]
        elif self.negation == "not":
            aux = {"pres": "does" if third_sg else "do", "past": "did", "fut": "will"}[self.tense]
            words = [aux, "not", base]
        else:
            adv = [self.adverb[0]] if self.adverb else []
            if self.tense == "pres":
                words = adv + [third if third_sg else base]
            elif self.tense == "past":
                words = adv + [past]
            else:
                words = ["will"] + adv + [base]
        if verb.prep:
            words.append(verb.prep)
        return words

    def french(self, verb, person, participle=None):
        neg = self.negation
        tail = (["pas"] if neg == "not" else ["jamais"] if neg == "never" else
                [self.adverb[1]] if self.adverb else [])
        if self.tense == "pres":
            finite, rest = verb.present[person], []
        elif self.tense == "past":
            finite, rest = AVOIR[person], [participle or verb.participle]
        else:
            finite, rest = verb.future + FUTURE_ENDINGS[person], []
        return (["ne"] if neg else []) + [finite] + tail + rest

    def spanish(self, verb, person):
        return spanish.verb_group((verb.en[0], verb.kind), self.tense, self.negation,
                                  self.adverb and self.adverb[0], person)

    def spanish_be(self, person, copula):
        return spanish.be(copula, self.tense, self.negation, person)

    def english_be(self, person):
        third_sg = person == 2
        neg = ["not"] if self.negation else []
        if self.tense == "pres":
            be = "am" if person == 0 else "is" if third_sg else "are"
            return [be] + neg
        if self.tense == "past":
            return ["was" if person in (0, 2) else "were"] + neg
        return ["will"] + neg + ["be"]

    def french_be(self, person):
        tail = ["pas"] if self.negation else []
        ne = ["ne"] if self.negation else []
        if self.tense == "pres":
            return ne + [ETRE[person]] + tail
        if self.tense == "past":  # was -> imparfait
            return ne + [ETRE_IMPARFAIT[person]] + tail
        return ne + ["ser" + FUTURE_ENDINGS[person]] + tail


def verb_group(rng, tense=None, allow_adverb=True):
    tense = tense or rng.choices(["pres", "past", "fut"], [45, 35, 20])[0]
    r = rng.random()
    if r < 0.25:
        return VerbGroup(tense, "not", None)
    if r < 0.31:
        return VerbGroup(tense, "never", None)
    if allow_adverb and r < 0.40:
        return VerbGroup(tense, None, rng.choice([("often", "souvent"), ("always", "toujours")]))
    return VerbGroup(tense, None, None)


def prepositional_phrase(rng, det=None):
    en_p, fr_p, cats = rng.choice(PREPOSITIONS)
    if en_p == ["in"]:
        cats = (PLACE,) if rng.random() < 0.7 else (THING,)
    only = cats if isinstance(cats, set) else None
    np_ = noun_phrase(rng, cats, only=only, det=det or rng.choices(["def", "indef", "poss", "dem"],
                                                        [55, 20, 15, 10])[0],
                      plural=False if en_p == ["near"] else None,
                      adjectives=rng.choices([0, 1], [70, 30])[0])
    if en_p == ["in"] and cats == (THING,):
        # only containers hold things
        np_ = noun_phrase(rng, (THING,), det="def", adjectives=rng.choice([0, 1]),
                          only=CONTAINERS)
    return en_p + np_.en, fr_p + np_.fr, spanish.PREPOSITIONS[" ".join(en_p)] + np_.es


TIME_ADVERBS = {"past": [("yesterday", "hier")], "fut": [("tomorrow", "demain")],
                "pres": [("now", "maintenant")]}


def subject(rng, cats, allow_pronoun=True, allow_relative=False):
    r = rng.random()
    if allow_pronoun and PERSON in cats and r < 0.35:
        return pronoun(rng)
    if r < 0.42:
        return coordinated(rng, cats)
    np_ = noun_phrase(rng, cats, det=rng.choices(["def", "poss", "dem", "num", "indef"],
                                                 [55, 20, 10, 7, 8])[0],
                      plural=None)
    if np_.indefinite and np_.plural:  # no bare plural subjects
        np_ = noun_phrase(rng, cats, det="def")
    if allow_relative and rng.random() < 0.5:
        return relative(rng, np_, cats_of(np_))
    return np_


def noun_of(np_):
    """The head noun of a simple noun phrase (its last English word)."""
    for noun in NOUNS:
        if np_.en[-1] in (noun.en, noun.en_pl):
            return noun
    raise ValueError(np_.en)


def cats_of(np_):
    return noun_of(np_).cat


def relative(rng, np_, cat):
    """NP + who/that clause. Returns the extended NP."""
    tense_vg = verb_group(rng, allow_adverb=False)
    subj_verbs = [v for v in VERBS_BY_KIND["tr"] + VERBS_BY_KIND["intr"] if cat in v.subj]
    head = noun_of(np_).en
    obj_verbs = [v for v in VERBS_BY_KIND["tr"] if cat in v.obj and not v.prep
                 and head in OBJECTS.get(v.en[0], (head,))]
    if not subj_verbs and not obj_verbs:
        return np_
    if obj_verbs and (not subj_verbs or rng.random() < 0.45):
        # object relative: the apple that the man ate -> la pomme que l' homme a mangée
        verb = rng.choice(obj_verbs)
        subj = (pronoun(rng) if rng.random() < 0.4 else
                noun_phrase(rng, verb.subj, det=rng.choice(["def", "poss"]), adjectives=0))
        part = agree_participle(verb.participle, np_.gender, np_.plural)
        en = np_.en + ["that"] + subj.en + tense_vg.english(verb, subj.person)
        fr = np_.fr + ["que"] + subj.fr + tense_vg.french(verb, subj.person, part)
        es = np_.es + ["que"] + subj.es + tense_vg.spanish(verb, subj.person)
    else:
        verb = rng.choice(subj_verbs)
        person = 5 if np_.plural else 2
        en = np_.en + ["who" if cat == PERSON else "that"] + tense_vg.english(verb, person)
        fr = np_.fr + ["qui"] + tense_vg.french(verb, person)
        es = np_.es + ["que"] + tense_vg.spanish(verb, person)
        if verb.kind == "tr":
            obj = noun_phrase(rng, verb.obj, negated=bool(tense_vg.negation), adjectives=0,
                              only=OBJECTS.get(verb.en[0]))
            en += obj.en
            fr += obj.fr
            es += spanish.direct_object(obj.es, obj.is_person)
    return NP(en, fr, np_.gender, np_.plural, es=es, es_gender=np_.es_gender,
              is_person=np_.is_person)


def clause(rng, depth=0, allow_relative=True, tense=None):
    """One clause: (English tokens, French tokens, Spanish tokens)."""
    kind = rng.choices(["intr", "tr", "ditr", "be_adj", "be_pp", "comp"],
                       [18, 42, 10, 12, 8, 0 if depth else 10])[0]
    vg = verb_group(rng, tense=tense)
    if kind in ("be_adj", "be_pp"):
        vg.adverb = None
        if vg.negation == "never":
            vg.negation = "not"
        if kind == "be_adj":
            cat = rng.choice(ALL)
            if cat == PERSON:
                subj = subject(rng, (PERSON,), allow_relative=allow_relative)
                if subj.en[0] in ("i", "you", "we"):
                    subj = pronoun(rng, ("he", "she", "they"))
            else:
                subj = subject(rng, (cat,), allow_pronoun=False, allow_relative=allow_relative)
            adj = rng.choice([a for a in PREDICATE_ADJECTIVES if cat in a.cats])
            en = subj.en + vg.english_be(subj.person) + [adj.en]
            fr = subj.fr + vg.french_be(subj.person) + [adj.fr(subj.gender, subj.plural)]
            es = (subj.es + vg.spanish_be(subj.person, spanish.ADJECTIVES[adj.en][1])
                  + [spanish.adjective(adj.en, subj.es_gender, subj.plural)])
        else:
            subj = subject(rng, (PERSON, ANIMAL, THING), allow_relative=allow_relative)
            pp_en, pp_fr, pp_es = prepositional_phrase(rng)
            en = subj.en + vg.english_be(subj.person) + pp_en
            fr = subj.fr + vg.french_be(subj.person) + pp_fr
            es = subj.es + vg.spanish_be(subj.person, "estar") + pp_es
    elif kind == "comp":
        verb = rng.choice(VERBS_BY_KIND["comp"])
        vg.adverb = None
        if vg.negation == "never":
            vg.negation = "not"
        subj = subject(rng, (PERSON,), allow_relative=False)
        sub_en, sub_fr, sub_es = clause(rng, depth + 1, allow_relative=False)
        en = subj.en + vg.english(verb, subj.person) + ["that"] + sub_en
        fr = subj.fr + vg.french(verb, subj.person) + ["que"] + sub_fr
        es = subj.es + vg.spanish(verb, subj.person) + ["que"] + sub_es
        return en, fr, es
    else:
        verb = rng.choice(VERBS_BY_KIND[kind])
        subj = subject(rng, verb.subj, allow_relative=allow_relative and rng.random() < 0.3)
        subj_relative = len(subj.fr) > 4 and ("qui" in subj.fr or "que" in subj.fr)
        en = subj.en + vg.english(verb, subj.person)
        fr = subj.fr + vg.french(verb, subj.person)
        es = subj.es + vg.spanish(verb, subj.person)
        if kind in ("tr", "ditr"):
            obj = noun_phrase(rng, verb.obj, negated=bool(vg.negation),
                              only=OBJECTS.get(verb.en[0]))
            if allow_relative and not subj_relative and rng.random() < 0.2:
                obj = relative(rng, obj, cats_of(obj))
            en += obj.en
            fr += obj.fr
            es += spanish.direct_object(obj.es, obj.is_person)
            if kind == "ditr":
                io = noun_phrase(rng, (PERSON,), det=rng.choice(["def", "poss", "indef"]),
                                 adjectives=rng.choices([0, 1], [75, 25])[0])
                en += ["to"] + io.en
                fr += ["à"] + io.fr
                es += ["a"] + io.es
        if kind == "intr" or (kind == "tr" and rng.random() < 0.2):
            if rng.random() < 0.7:
                pp_en, pp_fr, pp_es = prepositional_phrase(rng)
                en += pp_en
                fr += pp_fr
                es += pp_es
    if depth == 0 and rng.random() < 0.15 and vg.adverb is None:
        en_t, fr_t = rng.choice(TIME_ADVERBS[vg.tense])
        en.append(en_t)
        fr.append(fr_t)
        es += spanish.ADVERBS[en_t]
    return en, fr, es


def finish_french(tokens):
    """Elision (le homme -> l' homme, je ai -> j' ai, ne est -> n' est,
    que il -> qu' il, de un -> d' un), then contraction (à le -> au,
    à les -> aux, de le -> du, de les -> des)."""
    out = []
    for i, tok in enumerate(tokens):
        nxt = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok in ELISION and nxt is not None and fr_vowel(nxt):
            tok = ELISION[tok]
        out.append(tok)
    res = []
    for tok in out:
        if res and res[-1] == "à" and tok in ("le", "les"):
            res[-1] = "au" if tok == "le" else "aux"
        elif res and res[-1] == "de" and tok in ("le", "les"):
            res[-1] = "du" if tok == "le" else "des"
        else:
            res.append(tok)
    return res


def sentence(rng):
    """One sentence: (English, French, Spanish), tokens joined by spaces."""
    r = rng.random()
    if r < 0.18:
        en1, fr1, es1 = clause(rng, allow_relative=False)
        en2, fr2, es2 = clause(rng, allow_relative=False)
        conj = rng.choice([("and", "et"), ("but", "mais")])
        en, fr = en1 + [conj[0]] + en2, fr1 + [conj[1]] + fr2
        es = es1 + [spanish.CONJUNCTIONS[conj[0]]] + es2
    else:
        en, fr, es = clause(rng)
    return (" ".join(en + ["."]), " ".join(finish_french(fr + ["."])),
            " ".join(spanish.finish(es + ["."])))


def acceptable(en, fr, es=None):
    """Length bounds of English and French (Spanish is not checked: the
    English and French data do not depend on it)."""
    ne, nf = len(en.split()), len(fr.split())
    return (MIN_TOKENS <= ne <= MAX_TOKENS and MIN_TOKENS <= nf <= MAX_TOKENS
            and nf <= ne + MAX_EXTRA_TARGET)


def generate(seed, total):
    """`total` distinct (English, French, Spanish) sentences in generation
    order."""
    rng = random.Random(seed)
    seen = {}
    pairs = []
    attempts = 0
    while len(pairs) < total:
        attempts += 1
        if attempts > total * 50:
            sys.exit("generate: too few distinct sentences")
        triple = sentence(rng)
        en = triple[0]
        if not acceptable(*triple):
            continue
        if en in seen:
            if seen[en] != triple:
                sys.exit(f"generate: ambiguous source {en!r}: {seen[en][1:]!r} / "
                         f"{triple[1:]!r}")
            continue
        seen[en] = triple
        pairs.append(triple)
    return pairs


def top_up(seed, pairs, exclude, min_count, max_attempts):
    """Extra distinct pairs, none of whose English is in `exclude`, each
    holding a French token seen fewer than `min_count` times in `pairs` and
    the extra pairs so far: rare forms (an irregular participle agreeing in
    an object relative, a future with vous...) get enough examples."""
    rng = random.Random(seed)
    counts = collections.Counter(t for p in pairs for t in p[1].split())
    seen = set(exclude)
    extra = []
    for _ in range(max_attempts):
        if all(n >= min_count for n in counts.values()):
            break
        triple = sentence(rng)
        if triple[0] in seen or not acceptable(*triple):
            continue
        tokens = triple[1].split()
        if all(counts[t] >= min_count for t in tokens):
            continue
        seen.add(triple[0])
        extra.append(triple)
        counts.update(tokens)
    return extra


def write_lines(path, lines):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for line in lines:
            f.write(line + "\n")


def vocabulary(lines):
    counts = collections.Counter(tok for line in lines for tok in line.split())
    tokens = sorted(counts, key=lambda t: (-counts[t], t))
    return SPECIALS + tokens


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--train", type=int, default=150000)
    ap.add_argument("--valid", type=int, default=2000)
    ap.add_argument("--test", type=int, default=1500)
    ap.add_argument("--min-count", type=int, default=50,
                    help="add training pairs holding French tokens seen fewer times")
    ap.add_argument("--top-up-attempts", type=int, default=3000000,
                    help="sentences drawn at most for those extra pairs")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "toy"))
    ap.add_argument("--test-out", default=os.path.join(ROOT, "models", "toy-en-fr"))
    ap.add_argument("--es", action="store_true",
                    help="also write the Spanish of every sentence (train.es, valid.es, "
                         "test.es, vocab.es); the English and French files are the same "
                         "with or without it")
    args = ap.parse_args()

    pairs = generate(args.seed, args.test + args.valid + args.train)
    test = pairs[:args.test]
    valid = pairs[args.test:args.test + args.valid]
    train = pairs[args.test + args.valid:]
    if args.min_count:
        extra = top_up(args.seed + 1, train, [p[0] for p in pairs], args.min_count,
                       args.top_up_attempts)
        train += extra
        print(f"top-up: {len(extra)} training pairs with rare French tokens")

    for name, part, where in (("train", train, args.out), ("valid", valid, args.out),
                              ("test", test, args.test_out)):
        write_lines(os.path.join(where, name + ".en"), [p[0] for p in part])
        write_lines(os.path.join(where, name + ".fr"), [p[1] for p in part])
        if args.es:
            write_lines(os.path.join(where, name + ".es"), [p[2] for p in part])
    if args.es:
        write_lines(os.path.join(args.out, "vocab.es"), vocabulary(p[2] for p in train))
    src_vocab = vocabulary(p[0] for p in train)
    tgt_vocab = vocabulary(p[1] for p in train)
    write_lines(os.path.join(args.out, "vocab.en"), src_vocab)
    write_lines(os.path.join(args.out, "vocab.fr"), tgt_vocab)

    known_src, known_tgt = set(src_vocab), set(tgt_vocab)
    unknown = {t for p in test + valid for t in p[0].split() if t not in known_src}
    unknown |= {t for p in test + valid for t in p[1].split() if t not in known_tgt}
    lengths = [len(p[0].split()) for p in pairs]
    print(f"train {len(train)}  valid {len(valid)}  test {len(test)}  "
          f"vocab en {len(src_vocab)} fr {len(tgt_vocab)}  "
          f"English tokens per sentence {min(lengths)}..{max(lengths)} "
          f"(mean {sum(lengths) / len(lengths):.1f})")
    if unknown:
        sys.exit(f"generate: tokens of valid/test missing from training: {sorted(unknown)}")


if __name__ == "__main__":
    main()
