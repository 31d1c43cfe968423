"""The Spanish side of the toy language of tools/toy/generate.py.

generate.py draws each sentence once, as a structure (nouns, adjectives,
determiners, tense, negation, clauses), and writes it in English and French;
with --es it also writes it in Spanish, from the same structure and without
drawing anything more, so the English and French output stays the same.

The toy Spanish follows the French structures: articles and adjectives agree
with the noun in gender (the Spanish noun's own) and number; the adjectives
French puts before the noun stand before it in Spanish too, with the short
forms buen, mal (masculine singular) and gran (singular); the past is the
compound past with haber ("he comido", participles invariable); "no" and
"nunca" go before the verb group, and so do "siempre" and "a menudo"; to be
is ser, or estar for places and for the adjectives of a state (tired,
happy, broken, ...), in the imperfect in the past; subject pronouns are
kept, "you" is vosotros, "they" ellos; a person as direct object takes the
personal "a"; relatives take "que"; a + el and de + el contract to al and
del. Fixed choices: "his", "her" and "their" are all su / sus; plural
indefinites have no article; un / una stay after a negation; verbs stay in
the indicative (Spanish would put "esperar que" and a negated "pensar que"
in the subjunctive).
"""

# English singular -> Spanish singular, plural, gender.
NOUNS = {
    "man": ("hombre", "hombres", "m"), "woman": ("mujer", "mujeres", "f"),
    "boy": ("chico", "chicos", "m"), "girl": ("chica", "chicas", "f"),
    "child": ("niño", "niños", "m"), "teacher": ("profesor", "profesores", "m"),
    "doctor": ("médico", "médicos", "m"), "student": ("estudiante", "estudiantes", "m"),
    "friend": ("amigo", "amigos", "m"), "king": ("rey", "reyes", "m"),
    "queen": ("reina", "reinas", "f"), "farmer": ("granjero", "granjeros", "m"),
    "baker": ("panadero", "panaderos", "m"), "neighbor": ("vecino", "vecinos", "m"),
    "sister": ("hermana", "hermanas", "f"), "brother": ("hermano", "hermanos", "m"),
    "mother": ("madre", "madres", "f"), "father": ("padre", "padres", "m"),
    "actress": ("actriz", "actrices", "f"), "cat": ("gato", "gatos", "m"),
    "dog": ("perro", "perros", "m"), "horse": ("caballo", "caballos", "m"),
    "bird": ("pájaro", "pájaros", "m"), "mouse": ("ratón", "ratones", "m"),
    "cow": ("vaca", "vacas", "f"), "rabbit": ("conejo", "conejos", "m"),
    "duck": ("pato", "patos", "m"), "elephant": ("elefante", "elefantes", "m"),
    "owl": ("búho", "búhos", "m"), "apple": ("manzana", "manzanas", "f"),
    "cake": ("pastel", "pasteles", "m"), "cheese": ("queso", "quesos", "m"),
    "orange": ("naranja", "naranjas", "f"), "egg": ("huevo", "huevos", "m"),
    "pear": ("pera", "peras", "f"), "tomato": ("tomate", "tomates", "m"),
    "carrot": ("zanahoria", "zanahorias", "f"), "sandwich": ("sándwich", "sándwiches", "m"),
    "book": ("libro", "libros", "m"), "letter": ("carta", "cartas", "f"),
    "car": ("coche", "coches", "m"), "table": ("mesa", "mesas", "f"),
    "chair": ("silla", "sillas", "f"), "key": ("llave", "llaves", "f"),
    "box": ("caja", "cajas", "f"), "bag": ("bolso", "bolsos", "m"),
    "hat": ("sombrero", "sombreros", "m"), "ball": ("pelota", "pelotas", "f"),
    "painting": ("cuadro", "cuadros", "m"), "newspaper": ("periódico", "periódicos", "m"),
    "door": ("puerta", "puertas", "f"), "window": ("ventana", "ventanas", "f"),
    "bed": ("cama", "camas", "f"), "cup": ("taza", "tazas", "f"),
    "bottle": ("botella", "botellas", "f"), "umbrella": ("paraguas", "paraguas", "m"),
    "garden": ("jardín", "jardines", "m"), "kitchen": ("cocina", "cocinas", "f"),
    "school": ("escuela", "escuelas", "f"), "park": ("parque", "parques", "m"),
    "street": ("calle", "calles", "f"), "forest": ("bosque", "bosques", "m"),
    "room": ("habitación", "habitaciones", "f"), "city": ("ciudad", "ciudades", "f"),
    "hotel": ("hotel", "hoteles", "m"), "tree": ("árbol", "árboles", "m"),
    "church": ("iglesia", "iglesias", "f"),
}


def _o(m):
    """The four forms of an adjective in -o: negro negra negros negras."""
    return (m, m[:-1] + "a", m + "s", m[:-1] + "as")


def _same(m, pl=None):
    """An adjective with one form per number: verde verdes, azul azules."""
    pl = pl or (m + "s" if m[-1] in "aeiou" else m + "es")
    return (m, m, pl, pl)


# English -> (m sg, f sg, m pl, f pl), copula (ser / estar), short form
# before a noun (None, or (form, masculine singular only)).
ADJECTIVES = {
    "black": (_o("negro"), "ser"), "white": (_o("blanco"), "ser"),
    "red": (_o("rojo"), "ser"), "green": (_same("verde"), "ser"),
    "blue": (_same("azul"), "ser"), "yellow": (_o("amarillo"), "ser"),
    "gray": (_same("gris"), "ser"), "happy": (_same("feliz", "felices"), "estar"),
    "sad": (_same("triste"), "estar"), "tired": (_o("cansado"), "estar"),
    "hungry": (_o("hambriento"), "estar"), "lazy": (_o("perezoso"), "ser"),
    "brave": (_same("valiente"), "ser"), "smart": (_same("inteligente"), "ser"),
    "rich": (_o("rico"), "ser"), "famous": (_o("famoso"), "ser"),
    "noisy": (_o("ruidoso"), "ser"), "quiet": (_o("tranquilo"), "estar"),
    "clean": (_o("limpio"), "estar"), "dirty": (_o("sucio"), "estar"),
    "heavy": (_o("pesado"), "ser"), "broken": (_o("roto"), "estar"),
    "strange": (_o("extraño"), "ser"), "fresh": (_o("fresco"), "estar"),
    "sweet": (_same("dulce"), "ser"), "round": (_o("redondo"), "ser"),
    "small": (_o("pequeño"), "ser"), "big": (_same("grande"), "ser"),
    "beautiful": (_o("hermoso"), "ser"), "young": (_same("joven", "jóvenes"), "ser"),
    "old": (_o("viejo"), "ser"), "good": (_o("bueno"), "ser"),
    "new": (_o("nuevo"), "ser"), "pretty": (_o("bonito"), "ser"),
    "bad": (_o("malo"), "ser"),
}
# Short forms before a singular noun: (form, masculine only).
SHORT_FORMS = {"good": ("buen", True), "bad": ("mal", True), "big": ("gran", False)}


def adjective(en, gender, plural, before_noun=False):
    forms = ADJECTIVES[en][0]
    short = SHORT_FORMS.get(en)
    if before_noun and short and not plural and (gender == "m" or not short[1]):
        return short[0]
    return forms[(2 if plural else 0) + (1 if gender == "f" else 0)]


ENDINGS = {"ar": ["o", "as", "a", "amos", "áis", "an"],
           "er": ["o", "es", "e", "emos", "éis", "en"],
           "ir": ["o", "es", "e", "imos", "ís", "en"]}


def _regular(infinitive):
    stem, kind = infinitive[:-2], infinitive[-2:].replace("í", "i")  # oír, reír
    return ([stem + e for e in ENDINGS[kind]],
            stem + ("ado" if kind == "ar" else "ido"), infinitive)


def _verb(infinitive, present=None, participle=None, future=None):
    reg_present, reg_participle, reg_future = _regular(infinitive)
    return (present.split() if present else reg_present, participle or reg_participle,
            future or reg_future)


# (English base, kind) -> (present yo tú él nosotros vosotros ellos, past
# participle, future stem).
VERBS = {
    ("eat", "tr"): _verb("comer"),
    ("see", "tr"): _verb("ver", "veo ves ve vemos veis ven", "visto"),
    ("love", "tr"): _verb("amar"),
    ("watch", "tr"): _verb("mirar"),
    ("find", "tr"): _verb("encontrar",
                          "encuentro encuentras encuentra encontramos encontráis encuentran"),
    ("buy", "tr"): _verb("comprar"),
    ("carry", "tr"): _verb("llevar"),
    ("wash", "tr"): _verb("lavar"),
    ("take", "tr"): _verb("tomar"),
    ("cook", "tr"): _verb("cocinar"),
    ("open", "tr"): _verb("abrir", None, "abierto"),
    ("visit", "tr"): _verb("visitar"),
    ("follow", "tr"): _verb("seguir", "sigo sigues sigue seguimos seguís siguen"),
    ("paint", "tr"): _verb("pintar"),
    ("write", "tr"): _verb("escribir", None, "escrito"),
    ("hear", "tr"): _verb("oír", "oigo oyes oye oímos oís oyen", "oído", "oir"),
    ("look", "tr"): _verb("buscar"),
    ("wait", "tr"): _verb("esperar"),
    ("listen", "tr"): _verb("escuchar"),
    ("clean", "tr"): _verb("limpiar"),
    ("catch", "tr"): _verb("atrapar"),
    ("forget", "tr"): _verb("olvidar"),
    ("know", "tr"): _verb("conocer", "conozco conoces conoce conocemos conocéis conocen"),
    ("help", "tr"): _verb("ayudar"),
    ("call", "tr"): _verb("llamar"),
    ("sleep", "intr"): _verb("dormir", "duermo duermes duerme dormimos dormís duermen"),
    ("walk", "intr"): _verb("caminar"),
    ("work", "intr"): _verb("trabajar"),
    ("sing", "intr"): _verb("cantar"),
    ("dance", "intr"): _verb("bailar"),
    ("play", "intr"): _verb("jugar", "juego juegas juega jugamos jugáis juegan"),
    ("run", "intr"): _verb("correr"),
    ("laugh", "intr"): _verb("reír", "río ríes ríe reímos reís ríen", "reído", "reir"),
    ("swim", "intr"): _verb("nadar"),
    ("cry", "intr"): _verb("llorar"),
    ("give", "ditr"): _verb("dar", "doy das da damos dais dan"),
    ("show", "ditr"): _verb("mostrar", "muestro muestras muestra mostramos mostráis muestran"),
    ("sell", "ditr"): _verb("vender"),
    ("bring", "ditr"): _verb("traer", "traigo traes trae traemos traéis traen", "traído"),
    ("send", "ditr"): _verb("enviar", "envío envías envía enviamos enviáis envían"),
    ("think", "comp"): _verb("pensar", "pienso piensas piensa pensamos pensáis piensan"),
    ("say", "comp"): _verb("decir", "digo dices dice decimos decís dicen", "dicho", "dir"),
    ("know", "comp"): _verb("saber", "sé sabes sabe sabemos sabéis saben", None, "sabr"),
    ("hope", "comp"): _verb("esperar"),
}

HABER = ["he", "has", "ha", "hemos", "habéis", "han"]
FUTURE_ENDINGS = ["é", "ás", "á", "emos", "éis", "án"]
BE = {  # present, imperfect (English past), future stem
    "ser": (["soy", "eres", "es", "somos", "sois", "son"],
            ["era", "eras", "era", "éramos", "erais", "eran"], "ser"),
    "estar": (["estoy", "estás", "está", "estamos", "estáis", "están"],
              ["estaba", "estabas", "estaba", "estábamos", "estabais", "estaban"], "estar"),
}

# English subject pronoun -> Spanish.
PRONOUNS = {"i": "yo", "you": "vosotros", "he": "él", "she": "ella", "we": "nosotros",
            "they": "ellos"}
# English possessive -> (m sg, f sg, m pl, f pl).
POSSESSIVES = {"my": ("mi", "mi", "mis", "mis"),
               "your": ("vuestro", "vuestra", "vuestros", "vuestras"),
               "his": ("su", "su", "sus", "sus"), "her": ("su", "su", "sus", "sus"),
               "their": ("su", "su", "sus", "sus"),
               "our": ("nuestro", "nuestra", "nuestros", "nuestras")}
NUMBERS = {"two": "dos", "three": "tres", "four": "cuatro", "five": "cinco"}
DEFINITE = ("el", "la", "los", "las")
INDEFINITE = ("un", "una", "", "")
DEMONSTRATIVE = ("este", "esta", "estos", "estas")
# English preposition (joined by spaces) -> Spanish tokens.
PREPOSITIONS = {"in": ["en"], "on": ["sobre"], "under": ["debajo", "de"],
                "near": ["cerca", "de"], "behind": ["detrás", "de"],
                "in front of": ["delante", "de"], "with": ["con"], "without": ["sin"]}
ADVERBS = {"often": ["a", "menudo"], "always": ["siempre"], "yesterday": ["ayer"],
           "tomorrow": ["mañana"], "now": ["ahora"]}
CONJUNCTIONS = {"and": "y", "but": "pero"}


def noun(en, plural):
    """(Spanish noun, its gender) of an English singular noun."""
    sg, pl, gender = NOUNS[en]
    return (pl if plural else sg), gender


def determiner(det, gender, plural, owner=None, number=None):
    """The Spanish determiner tokens: det is def, indef, poss (owner: the
    English possessive), dem or num (number: the English numeral)."""
    i = (2 if plural else 0) + (1 if gender == "f" else 0)
    if det == "poss":
        word = POSSESSIVES[owner][i]
    elif det == "num":
        word = NUMBERS[number]
    else:
        word = {"def": DEFINITE, "indef": INDEFINITE, "dem": DEMONSTRATIVE}[det][i]
    return [word] if word else []


def noun_phrase(en_noun, pre, post, det, plural, owner=None, number=None):
    """(tokens, gender) of a noun phrase: determiner, the adjective `pre`
    (English, or None), the noun, the adjective `post`."""
    word, gender = noun(en_noun, plural)
    words = ([adjective(pre, gender, plural, True)] if pre else []) + [word]
    if post:
        words.append(adjective(post, gender, plural))
    return determiner(det, gender, plural, owner, number) + words, gender


def verb_group(verb_key, tense, negation, adverb, person):
    """The finite verb group: [no | nunca | adverb] finite [participle]."""
    present, participle, future = VERBS[verb_key]
    if tense == "pres":
        words = [present[person]]
    elif tense == "past":
        words = [HABER[person], participle]
    else:
        words = [future + FUTURE_ENDINGS[person]]
    if negation:
        return ["no" if negation == "not" else "nunca"] + words
    return (ADVERBS[adverb] if adverb else []) + words


def be(copula, tense, negation, person):
    present, imperfect, future = BE[copula]
    form = {"pres": present[person], "past": imperfect[person],
            "fut": future + FUTURE_ENDINGS[person]}[tense]
    return (["no"] if negation else []) + [form]


def direct_object(np_tokens, is_person):
    """The personal "a" before a person as direct object."""
    return (["a"] if is_person else []) + np_tokens


def finish(tokens):
    """a el -> al, de el -> del."""
    res = []
    for tok in tokens:
        if res and res[-1] in ("a", "de") and tok == "el":
            res[-1] += "l"
        else:
            res.append(tok)
    return res
