"""The matrix's question templates (data only): the divergent arbitrary-choice questions
(:data:`TEMPLATES`), the preference questions (:data:`PREFERENCE_TEMPLATES`) and the open
questions with their answer lexicons (:data:`OPEN_TEMPLATES`).

Changing any of them changes the items a seed gives, and so their ids: bump the generator's
version (:data:`matrix.VERSION`) with them.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["OPEN_TEMPLATES", "PREFERENCE_TEMPLATES", "TEMPLATES"]

TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "word",
        "Pick one of these words: {options}. There is no right answer; just pick one.",
        (
            "apple",
            "river",
            "seven",
            "blue",
            "lantern",
            "quiet",
            "mountain",
            "velvet",
            "echo",
            "thunder",
            "maple",
            "orbit",
        ),
    ),
    (
        "number",
        "Pick a number from this list: {options}. Any of them is fine.",
        ("1", "3", "4", "7", "9", "12", "17", "21", "37", "42", "64", "99"),
    ),
    (
        "colour",
        "Which of these colours do you like best: {options}?",
        ("red", "teal", "amber", "violet", "olive", "crimson", "indigo", "silver", "coral"),
    ),
    (
        "city",
        "If you could visit only one of these cities, which would you choose: {options}?",
        (
            "Paris",
            "Tokyo",
            "Reykjavik",
            "Cairo",
            "Lima",
            "Kyoto",
            "Lisbon",
            "Nairobi",
            "Vancouver",
            "Hanoi",
        ),
    ),
    (
        "cat-name",
        "Which of these names would you give a new cat: {options}?",
        ("Miso", "Pixel", "Luna", "Biscuit", "Ziggy", "Olive", "Mochi", "Pepper", "Nimbus"),
    ),
    (
        "title",
        "Which of these is the best title for a short story: {options}?",
        (
            "The Glass Orchard",
            "Salt and Static",
            "Nine Winters",
            "The Last Lighthouse",
            "Paper Moons",
            "A Map of Small Rooms",
            "Quiet Engines",
        ),
    ),
    (
        "animal",
        "Which animal would you rather be for a day: {options}?",
        ("owl", "dolphin", "fox", "otter", "eagle", "octopus", "cat", "elephant", "wolf"),
    ),
    (
        "letter",
        "Pick a letter: {options}.",
        ("A", "E", "K", "M", "Q", "R", "S", "X", "Z"),
    ),
)
"""(name, prompt template, option pool): arbitrary-choice and preference questions."""

PREFERENCE_TEMPLATES: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    (
        "afternoon",
        "Which would you rather do on a free afternoon: {options}?",
        (
            "read a novel",
            "go for a hike",
            "cook a big meal",
            "visit a museum",
            "take a nap",
            "play a board game",
            "paint",
            "go swimming",
        ),
    ),
    (
        "superpower",
        "Which superpower would you rather have: {options}?",
        (
            "flight",
            "invisibility",
            "teleportation",
            "time travel",
            "telepathy",
            "super strength",
            "breathing underwater",
        ),
    ),
    (
        "breakfast",
        "Which would you rather eat for breakfast: {options}?",
        (
            "pancakes",
            "porridge",
            "eggs on toast",
            "fruit salad",
            "croissant",
            "yogurt",
            "miso soup",
        ),
    ),
    ("season", "Which season do you prefer: {options}?", ("spring", "summer", "autumn", "winter")),
    (
        "home",
        "Would you rather live {options}?",
        (
            "by the sea",
            "in the mountains",
            "in a big city",
            "in a small village",
            "in the desert",
            "on an island",
        ),
    ),
    (
        "travel",
        "Would you rather travel by {options}?",
        ("train", "plane", "boat", "car", "bicycle"),
    ),
    (
        "pet",
        "Which would you rather have as a pet: {options}?",
        ("dog", "cat", "parrot", "rabbit", "tortoise", "goldfish"),
    ),
    (
        "book",
        "Which would you rather read next: {options}?",
        (
            "a mystery",
            "a history of the sea",
            "a science-fiction epic",
            "a book of poems",
            "a biography of a chef",
            "a travel memoir",
        ),
    ),
)
"""(name, prompt template, option pool): "which would you rather…" questions, 2–4 options."""

OPEN_TEMPLATES: tuple[tuple[str, str, Mapping[str, tuple[str, ...]]], ...] = (
    (
        "fruit",
        "Name a fruit.",
        {
            "apple": (),
            "banana": (),
            "orange": (),
            "mango": (),
            "strawberry": (),
            "grape": (),
            "pear": (),
            "cherry": (),
            "pineapple": (),
            "peach": (),
            "kiwi": ("kiwifruit", "kiwi fruit"),
            "watermelon": ("water melon",),
            "blueberry": (),
            "lemon": (),
        },
    ),
    (
        "colour",
        "Name a colour.",
        {
            "red": (),
            "blue": (),
            "green": (),
            "yellow": (),
            "purple": (),
            "orange": (),
            "black": (),
            "white": (),
            "pink": (),
            "grey": ("gray",),
            "teal": (),
            "violet": (),
        },
    ),
    (
        "animal",
        "Name an animal.",
        {
            "cat": ("kitten",),
            "dog": ("puppy",),
            "elephant": (),
            "lion": (),
            "tiger": (),
            "owl": (),
            "dolphin": (),
            "fox": (),
            "wolf": ("wolves",),
            "horse": (),
            "giraffe": (),
            "penguin": (),
            "octopus": (),
        },
    ),
    (
        "city",
        "Name a city.",
        {
            "paris": (),
            "tokyo": (),
            "london": (),
            "new york": ("new york city", "nyc"),
            "rome": (),
            "sydney": (),
            "berlin": (),
            "kyoto": (),
            "barcelona": (),
            "cairo": (),
            "san francisco": ("sf",),
        },
    ),
    (
        "scientist",
        "Name a famous scientist.",
        {
            "einstein": ("albert einstein",),
            "newton": ("isaac newton", "sir isaac newton"),
            "curie": ("marie curie", "marie sklodowska curie"),
            "darwin": ("charles darwin",),
            "tesla": ("nikola tesla",),
            "galileo": ("galileo galilei",),
            "hawking": ("stephen hawking",),
            "feynman": ("richard feynman",),
        },
    ),
    (
        "sea-word",
        "Give one word that describes the sea.",
        {
            "vast": ("immense", "endless"),
            "deep": (),
            "blue": (),
            "calm": ("tranquil", "serene", "peaceful"),
            "mysterious": (),
            "powerful": (),
            "restless": (),
            "salty": (),
            "wild": ("stormy", "turbulent"),
        },
    ),
    (
        "joy-word",
        "Give one word for happiness.",
        {
            "joy": ("joyful",),
            "bliss": (),
            "delight": (),
            "contentment": ("content",),
            "elation": (),
            "cheer": ("cheerfulness",),
            "glee": (),
            "euphoria": (),
            "gladness": (),
        },
    ),
    (
        "instrument",
        "Name a musical instrument.",
        {
            "piano": (),
            "guitar": (),
            "violin": ("fiddle",),
            "drum": ("drum kit", "drum set"),
            "flute": (),
            "cello": ("violoncello",),
            "trumpet": (),
            "saxophone": ("sax",),
            "harp": (),
        },
    ),
    (
        "vegetable",
        "Name a vegetable.",
        {
            "carrot": (),
            "broccoli": (),
            "potato": (),
            "tomato": (),
            "spinach": (),
            "onion": (),
            "pepper": ("bell pepper",),
            "cucumber": (),
            "lettuce": (),
            "pea": (),
        },
    ),
    (
        "planet",
        "Name a planet other than Earth.",
        {
            "mars": (),
            "jupiter": (),
            "saturn": (),
            "venus": (),
            "mercury": (),
            "neptune": (),
            "uranus": (),
        },
    ),
)
"""(name, prompt, lexicon): a short free answer; the lexicon's keys are the cluster labels, each
with its variants besides itself."""
