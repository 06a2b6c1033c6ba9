"""A mother's family notebook over half a year of dated sessions, two to three weeks apart.

A mother and an aunt called Greta and Gerda, a daughter and her best friend called Ivy and Iva,
Bergen and Bergamo; the mother moves (a plan in one session, the move in another), the husband
changes jobs, piano lessons move to another day, a holiday booking is cancelled and rebooked;
a knee injury through six physio sessions, a child's peanut allergy that matters for a birthday
cake, an aisle seat wanted on every flight; a travel booking tool result.
"""

from __future__ import annotations

from long_scenarios.kit import (
    AGGREGATION,
    EVENT,
    MULTI,
    OPINION,
    PLAN,
    PREFERENCE,
    SINGLE,
    STATE,
    TEMPORAL,
    Scenario,
    ask,
    assistant,
    block,
    call,
    entity,
    fact,
    home_filler,
    relation,
    result,
    session,
    unknown,
    user,
)

SESSIONS = (
    session(
        "2026-01-11T19:30:00+00:00",
        block(
            "intro",
            user(
                "Hi! I'm Maren Holt. New year, new system: I want to keep family stuff here so I stop "
                "forgetting things."
            ),
            assistant("Hi Maren! Happy to be your family notebook."),
        ),
        block(
            "family",
            user(
                "Quick who's who: my husband is Teo Holt, our daughter Ivy is eight and our son Otto is five. "
                "We live in Trondheim."
            ),
            assistant("Noted: Teo (your husband), Ivy (8) and Otto (5), in Trondheim."),
        ),
        block(
            "mom",
            user("My mom, Greta Sandvik, lives in Bergen. She likes a phone call on Sunday evenings."),
            assistant("Noted: your mom Greta Sandvik lives in Bergen, and Sunday evenings are for calling her."),
        ),
        block(
            "allergy",
            user("Important: Otto is allergic to peanuts. Anything food-related for him has to be nut-free."),
            assistant("Noted: Otto has a peanut allergy, so everything for him is nut-free."),
        ),
    ),
    session(
        "2026-01-25T20:00:00+00:00",
        block(
            "trip-plan",
            user("Teo and I want to take the kids to Crete this summer."),
            assistant("Lovely! Crete this summer, noted."),
        ),
        block(
            "bergamo",
            user("Last spring we did Bergamo and the kids loved it, but this time we want a beach."),
            assistant("Noted: a beach this time."),
        ),
        block(
            "piano",
            user("Ivy started piano lessons with Mr. Kowal. The lessons are on Tuesdays after school."),
            assistant("Noted: Ivy's piano lessons with Mr. Kowal, Tuesdays after school."),
        ),
        block(
            "teo-job",
            user("Teo works at Nordhavn Shipping as a logistics planner."),
            assistant("Noted: Teo is a logistics planner at Nordhavn Shipping."),
        ),
    ),
    session(
        "2026-02-08T18:45:00+00:00",
        block(
            "knee",
            user(
                "My knee has been bad since my last long run. The doctor says it's runner's knee and sent me "
                "to a physio, Pilar Ocampo at Fjordside Physio."
            ),
            assistant("Sorry about the knee. Noted: runner's knee; physio Pilar Ocampo at Fjordside Physio."),
        ),
        block(
            "physio-1",
            user("First physio session was today. Pilar wants the exercises daily and no running for six weeks."),
            assistant("Noted: daily exercises and no running for six weeks. That's session one."),
        ),
        block(
            "aunt",
            user(
                "Mom's sister is Aunt Gerda Sandvik, she lives in Stavanger. Greta and Gerda, I know, my "
                "grandparents had a sense of humour."
            ),
            assistant("Ha! Noted: Aunt Gerda Sandvik lives in Stavanger."),
        ),
        block(
            "school",
            user("Ivy's school, Linden Park School, has its spring concert on March 26."),
            assistant("Noted: the Linden Park School spring concert is on March 26."),
        ),
    ),
    session(
        "2026-02-22T19:15:00+00:00",
        block(
            "booked",
            user("We booked Crete! Villa Amara in Chania, July 6 to 20."),
            assistant("Wonderful: Villa Amara in Chania, July 6 to 20."),
        ),
        block(
            "seat",
            user("For the flights, I always want an aisle seat; Teo takes the window with the kids."),
            assistant("Noted: an aisle seat for you on every flight."),
        ),
        block(
            "physio-2",
            user("Second physio session with Pilar. The knee feels better already."),
            assistant("Great. That's two sessions so far."),
        ),
        block(
            "brother",
            user("My brother Anders Sandvik and his partner Lise are expecting a baby in April! They live in Oslo."),
            assistant("Congratulations to Anders and Lise! Noted: they live in Oslo."),
        ),
    ),
    session(
        "2026-03-15T20:10:00+00:00",
        block(
            "mom-plan",
            user("Mom has decided to sell her place in Bergen and move to Stavanger to be near Aunt Gerda."),
            assistant("A big step. Noted: your mom plans to move to Stavanger."),
        ),
        block(
            "piano-moved",
            user("Mr. Kowal moved Ivy's piano lessons from Tuesdays to Thursdays."),
            assistant("Updated: Ivy's piano lessons are on Thursdays now."),
        ),
        block(
            "concert",
            user("Ivy is playing her first piece at the spring concert, she's so proud."),
            assistant("That's wonderful!"),
        ),
        block(
            "physio-3",
            user("Third physio session. Pilar says I can start easy jogging in two weeks."),
            assistant("Great progress: three sessions in, easy jogging in two weeks."),
        ),
    ),
    session(
        "2026-04-05T18:30:00+00:00",
        block(
            "teo-offer",
            user(
                "Teo accepted an offer from Kvist Energy! He starts on May 4 as a project manager, so he's "
                "leaving Nordhavn Shipping."
            ),
            assistant("Congratulations to Teo! Noted: project manager at Kvist Energy from May 4."),
        ),
        block(
            "baby",
            user("Anders and Lise had their baby, a girl called Sigrid!"),
            assistant("Congratulations! Welcome, Sigrid."),
        ),
        block(
            "grandkids",
            user("Mom is over the moon, she now has three grandchildren."),
            assistant("That's lovely: Ivy, Otto and now Sigrid."),
        ),
        block(
            "physio-4",
            user("Fourth physio session today, more strength work."),
            assistant("Noted: session four."),
        ),
        block(
            "iva",
            user(
                "Ivy's best friend is Iva, from her class. Yes, Ivy and Iva. Iva's mum is our neighbour, "
                "Kasia Nowak."
            ),
            assistant("Noted: Iva is Ivy's best friend, and her mum is your neighbour Kasia Nowak."),
        ),
    ),
    session(
        "2026-04-26T19:00:00+00:00",
        block(
            "villa-cancelled",
            user("Ugh, Villa Amara cancelled our booking. We rebooked at Hotel Kydonia in Chania, same dates."),
            assistant("Annoying, but sorted: Hotel Kydonia in Chania, July 6 to 20."),
        ),
        block(
            "party-plan",
            user("Otto wants his sixth birthday party at Hoppland, the trampoline park."),
            assistant("Fun! Noted: Otto's sixth birthday party at Hoppland."),
        ),
        block(
            "jog",
            user("First easy jog since the knee: 3 km and no pain!"),
            assistant("Fantastic!"),
        ),
    ),
    session(
        "2026-05-17T20:20:00+00:00",
        block(
            "mom-moved",
            user("Mom has moved! She's in her new flat in Stavanger now, ten minutes from Gerda."),
            assistant("Updated: your mom lives in Stavanger now."),
        ),
        block(
            "teo-manager",
            user("Teo's first two weeks at Kvist Energy went well. His manager there is Ruth Aalberg."),
            assistant("Noted: Teo's manager at Kvist Energy is Ruth Aalberg."),
        ),
        block(
            "party-date",
            user("The party is booked for June 13 at Hoppland."),
            assistant("Noted: Otto's party on June 13 at Hoppland."),
        ),
        block(
            "cake",
            user("I ordered a nut-free cake from Bakeri Solsikke for the party."),
            assistant("Noted: a nut-free cake from Bakeri Solsikke."),
        ),
        block(
            "physio-5",
            user("Physio session five, Pilar is happy with the knee."),
            assistant("Noted: session five."),
        ),
    ),
    session(
        "2026-06-07T19:40:00+00:00",
        block(
            "guests",
            user("Eight kids from Otto's kindergarten class are coming to the party, plus Ivy and Iva."),
            assistant("Noted: eight kindergarten friends, plus Ivy and Iva."),
        ),
        block(
            "physio-done",
            user("Last physio session today: Pilar discharged me!"),
            assistant("Congratulations! That makes six physio sessions in all."),
        ),
        block(
            "visit-plan",
            user("We'll visit Mom in Stavanger the first weekend after Crete."),
            assistant("Noted: a visit to your mom in Stavanger after the holiday."),
        ),
    ),
    session(
        "2026-06-28T18:50:00+00:00",
        block(
            "packing",
            user("Packing for Crete next week. Remind me that Otto's EpiPen goes in my hand luggage."),
            assistant("Noted: Otto's EpiPen goes in your hand luggage."),
        ),
        block(
            "seats",
            user("Can you check our flight seats?"),
            call("travel.get_booking", {"trip": "Crete", "date": "2026-07-06"}),
            result(
                "travel.get_booking",
                {
                    "flight": "Trondheim to Chania",
                    "date": "2026-07-06",
                    "seats": {"Maren Holt": "14C", "Ivy Holt": "14B", "Teo Holt": "15A", "Otto Holt": "15B"},
                },
            ),
            assistant("You're in 14C, an aisle seat, next to Ivy in 14B; Teo and Otto are in 15A and 15B."),
        ),
    ),
)

ENTITIES = (
    entity("Maren Holt", "person", "Maren"),
    entity("Teo Holt", "person", "Teo", role="project manager"),
    entity("Ivy", "person", "Ivy Holt"),
    entity("Otto", "person", "Otto Holt"),
    entity("Trondheim", "location"),
    entity("Greta Sandvik", "person", "Greta"),
    entity("Bergen", "location"),
    entity("Gerda Sandvik", "person", "Aunt Gerda", "Gerda"),
    entity("Stavanger", "location"),
    entity("Crete", "location"),
    entity("Bergamo", "location"),
    entity("Mr. Kowal", "person"),
    entity("Nordhavn Shipping", "organization"),
    entity("Kvist Energy", "organization"),
    entity("Ruth Aalberg", "person"),
    entity("Pilar Ocampo", "person", "Pilar", role="physio"),
    entity("Fjordside Physio", "organization"),
    entity("Linden Park School", "organization"),
    entity("spring concert", "event", date="March 26"),
    entity("Villa Amara", "location"),
    entity("Hotel Kydonia", "location"),
    entity("Chania", "location"),
    entity("Anders Sandvik", "person", "Anders"),
    entity("Lise", "person"),
    entity("Oslo", "location"),
    entity("Sigrid", "person"),
    entity("Iva", "person"),
    entity("Kasia Nowak", "person"),
    entity("Hoppland", "location"),
    entity("sixth birthday party", "event", date="June 13"),
    entity("Bakeri Solsikke", "organization"),
)

RELATIONS = (
    relation("Maren Holt", "partner_of", "Teo Holt"),
    relation("Maren Holt", "family_of", "Ivy"),
    relation("Maren Holt", "family_of", "Otto"),
    relation("Teo Holt", "family_of", "Ivy"),
    relation("Teo Holt", "family_of", "Otto"),
    relation("Ivy", "family_of", "Otto"),
    relation("Maren Holt", "lives_in", "Trondheim"),
    relation("Teo Holt", "lives_in", "Trondheim"),
    relation("Ivy", "lives_in", "Trondheim"),
    relation("Otto", "lives_in", "Trondheim"),
    relation("Maren Holt", "family_of", "Greta Sandvik"),
    relation("Greta Sandvik", "lives_in", "Bergen"),
    relation("Greta Sandvik", "lives_in", "Stavanger"),
    relation("Greta Sandvik", "family_of", "Gerda Sandvik"),
    relation("Maren Holt", "family_of", "Gerda Sandvik"),
    relation("Gerda Sandvik", "lives_in", "Stavanger"),
    relation("Teo Holt", "works_for", "Nordhavn Shipping"),
    relation("Teo Holt", "works_for", "Kvist Energy"),
    relation("Teo Holt", "reports_to", "Ruth Aalberg"),
    relation("Ruth Aalberg", "works_for", "Kvist Energy"),
    relation("Pilar Ocampo", "works_for", "Fjordside Physio"),
    relation("Ivy", "member_of", "Linden Park School"),
    relation("spring concert", "part_of", "Linden Park School"),
    relation("Ivy", "attends", "spring concert"),
    relation("Villa Amara", "located_in", "Chania"),
    relation("Hotel Kydonia", "located_in", "Chania"),
    relation("Chania", "located_in", "Crete"),
    relation("Maren Holt", "family_of", "Anders Sandvik"),
    relation("Anders Sandvik", "partner_of", "Lise"),
    relation("Anders Sandvik", "lives_in", "Oslo"),
    relation("Lise", "lives_in", "Oslo"),
    relation("Anders Sandvik", "family_of", "Sigrid"),
    relation("Lise", "family_of", "Sigrid"),
    relation("Ivy", "knows", "Iva"),
    relation("Kasia Nowak", "family_of", "Iva"),
    relation("Maren Holt", "knows", "Kasia Nowak"),
    relation("sixth birthday party", "located_in", "Hoppland"),
    relation("Otto", "attends", "sixth birthday party"),
    relation("Ivy", "attends", "sixth birthday party"),
    relation("Iva", "attends", "sixth birthday party"),
)

QUESTIONS = (
    ask("Where does Greta Sandvik live now?", "Stavanger", TEMPORAL, "mom-moved"),
    ask("Where did Maren's mom live before she moved?", "Bergen", TEMPORAL, "mom"),
    ask("Which hotel are the Holts staying at in Chania?", "Hotel Kydonia", TEMPORAL, "villa-cancelled"),
    ask("Where had they first booked in Chania?", "Villa Amara", TEMPORAL, "booked"),
    ask("On which day are Ivy's piano lessons now?", "Thursdays", TEMPORAL, "piano-moved"),
    ask("On which day were Ivy's piano lessons at first?", "Tuesdays", TEMPORAL, "piano"),
    ask("Where does Teo work now?", "Kvist Energy", TEMPORAL, "teo-offer"),
    ask("Where did Teo work before Kvist Energy?", "Nordhavn Shipping", TEMPORAL, "teo-job"),
    ask("Where did the family go last spring?", "Bergamo", TEMPORAL, "bergamo"),
    ask("When does Teo start at Kvist Energy?", "May 4", SINGLE, "teo-offer"),
    ask("Who is Teo's manager at Kvist Energy?", "Ruth Aalberg", SINGLE, "teo-manager"),
    ask("What is Otto allergic to?", "peanuts", SINGLE, "allergy"),
    ask("Where does Aunt Gerda live?", "Stavanger", SINGLE, "aunt"),
    ask("Who is Maren's physio?", "Pilar Ocampo", SINGLE, "knee"),
    ask("What is the name of Anders and Lise's baby?", "Sigrid", SINGLE, "baby"),
    ask("Where do Anders and Lise live?", "Oslo", SINGLE, "brother"),
    ask("Where is Otto's birthday party?", "Hoppland", SINGLE, "party-plan"),
    ask("When are the Holts in Chania?", "July 6 to 20", SINGLE, "booked"),
    ask("Who is Ivy's best friend?", "Iva", SINGLE, "iva"),
    ask("Which seat does Maren have on the flight to Chania?", "14C", SINGLE, "seats@2"),
    ask("When is the Linden Park School spring concert?", "March 26", SINGLE, "school"),
    ask("What has to go in Maren's hand luggage?", "Otto's EpiPen", SINGLE, "packing"),
    ask("Who teaches piano to Iva's best friend?", "Mr. Kowal", MULTI, "iva", "piano"),
    ask(
        "Which bakery is making the cake for the child with the peanut allergy?",
        "Bakeri Solsikke",
        MULTI,
        "allergy",
        "party-plan",
        "cake",
    ),
    ask("When is the party at the trampoline park?", "June 13", MULTI, "party-plan", "party-date"),
    ask("Which seat does Maren always want on flights?", "an aisle seat", PREFERENCE, "seat"),
    ask("When does Greta like to get a phone call?", "Sunday evenings", PREFERENCE, "mom"),
    ask(
        "How many physio sessions did Maren have in all?",
        "six",
        AGGREGATION,
        "physio-1",
        "physio-2",
        "physio-3",
        "physio-4",
        "physio-5",
        "physio-done@1",
    ),
    ask("How many grandchildren does Greta have?", "three", AGGREGATION, "family", "baby", "grandkids"),
    unknown("How old is Greta Sandvik?"),
    unknown("What is Teo's salary at Kvist Energy?"),
    unknown("Which airline are the Holts flying to Crete with?"),
)

# What people said that no relation holds: wishes, habits, plans that change, dated events. A fact about
# Maren herself ("I ...") also cites the intro, where she gives her name.
FACTS = (
    fact("Greta Sandvik likes a phone call on Sunday evenings", PREFERENCE, "Greta Sandvik", "mom", topic="phone calls"),
    fact("Otto is allergic to peanuts, so food for him has to be nut-free", STATE, "Otto", "allergy", topic="allergy"),
    fact(
        "Maren and Teo want to take the kids to Crete this summer",
        PLAN,
        ("Maren Holt", "Teo Holt", "Crete"),
        "trip-plan",
        topic="crete trip",
    ),
    fact(
        "Maren's family went to Bergamo last spring and the kids loved it",
        EVENT,
        ("Maren Holt", "Bergamo"),
        "bergamo",
    ),
    fact(
        "This time Maren and Teo want a beach",
        PREFERENCE,
        ("Maren Holt", "Teo Holt"),
        "trip-plan",
        "bergamo",
        topic="holiday",
    ),
    fact(
        "Ivy's piano lessons with Mr. Kowal are on Tuesdays after school",
        STATE,
        ("Ivy", "Mr. Kowal"),
        "piano",
        topic="piano lessons",
    ),
    fact(
        "Teo works at Nordhavn Shipping as a logistics planner",
        STATE,
        ("Teo Holt", "Nordhavn Shipping"),
        "teo-job",
        topic="job",
    ),
    fact(
        "Maren has runner's knee since her last long run and sees the physio Pilar Ocampo",
        STATE,
        ("Maren Holt", "Pilar Ocampo"),
        "knee",
        topic="knee",
    ),
    fact(
        "Maren had her first physio session with Pilar: daily exercises and no running for six weeks",
        EVENT,
        ("Maren Holt", "Pilar Ocampo"),
        "physio-1",
        when="2026-02-08",
        said="today",
    ),
    fact(
        "Ivy will play her first piece at the Linden Park School spring concert on March 26",
        PLAN,
        ("Ivy", "spring concert", "Linden Park School"),
        "school",
        "concert",
        topic="spring concert",
        when="2026-03-26",
        said="March 26",
    ),
    fact(
        "Ivy is so proud to play her first piece at the spring concert",
        OPINION,
        ("Ivy", "spring concert"),
        "concert",
    ),
    fact(
        "Maren's family booked Villa Amara in Chania, July 6 to 20",
        PLAN,
        ("Maren Holt", "Villa Amara", "Chania", "Crete"),
        "booked",
        topic="crete trip",
        when="2026-07-06",
        said="July 6",
    ),
    fact(
        "Maren always wants an aisle seat on flights; Teo takes the window with the kids",
        PREFERENCE,
        ("Maren Holt", "Teo Holt"),
        "seat",
        topic="flight seat",
    ),
    fact(
        "Anders Sandvik and Lise are expecting a baby",
        STATE,
        ("Anders Sandvik", "Lise"),
        "brother",
        topic="baby",
    ),
    fact(
        "Greta plans to sell her place in Bergen and move to Stavanger to be near Aunt Gerda",
        PLAN,
        ("Greta Sandvik", "Bergen", "Stavanger", "Gerda Sandvik"),
        "mom-plan",
        topic="home",
    ),
    fact("Ivy's piano lessons with Mr. Kowal are on Thursdays now", STATE, ("Ivy", "Mr. Kowal"), "piano-moved", topic="piano lessons"),
    fact(
        "Pilar says Maren can start easy jogging in two weeks",
        PLAN,
        ("Maren Holt", "Pilar Ocampo"),
        "physio-3",
        topic="running",
        when="2026-W13",
        said="in two weeks",
    ),
    fact("Teo accepted an offer from Kvist Energy", EVENT, ("Teo Holt", "Kvist Energy"), "teo-offer"),
    fact(
        "Teo starts at Kvist Energy on May 4 as a project manager, leaving Nordhavn Shipping",
        PLAN,
        ("Teo Holt", "Kvist Energy", "Nordhavn Shipping"),
        "teo-offer",
        topic="job",
        when="2026-05-04",
        said="May 4",
    ),
    fact(
        "Anders and Lise had their baby, a girl called Sigrid",
        STATE,
        ("Anders Sandvik", "Lise", "Sigrid"),
        "baby",
        topic="baby",
    ),
    fact("Greta now has three grandchildren", STATE, "Greta Sandvik", "mom", "grandkids", topic="grandchildren"),
    fact(
        "Kasia Nowak, the mum of Ivy's best friend Iva, is Maren's neighbour",
        STATE,
        ("Kasia Nowak", "Iva", "Maren Holt"),
        "iva",
        topic="neighbour",
    ),
    fact(
        "Villa Amara cancelled, and Maren's family rebooked at Hotel Kydonia in Chania for the same dates",
        PLAN,
        ("Maren Holt", "Hotel Kydonia", "Villa Amara", "Chania"),
        "villa-cancelled",
        topic="crete trip",
    ),
    fact(
        "Otto wants his sixth birthday party at Hoppland, the trampoline park",
        PREFERENCE,
        ("Otto", "Hoppland", "sixth birthday party"),
        "party-plan",
        topic="birthday party",
    ),
    fact(
        "Maren's first easy jog since the knee was 3 km with no pain",
        EVENT,
        "Maren Holt",
        "intro",
        "jog",
    ),
    fact(
        "Greta's new flat in Stavanger is ten minutes from Gerda",
        STATE,
        ("Greta Sandvik", "Stavanger", "Gerda Sandvik"),
        "mom-moved",
        topic="home",
    ),
    fact(
        "Teo's first two weeks at Kvist Energy went well",
        OPINION,
        ("Teo Holt", "Kvist Energy"),
        "teo-manager",
    ),
    fact(
        "Otto's party is booked for June 13 at Hoppland",
        PLAN,
        ("Otto", "Hoppland", "sixth birthday party"),
        "party-plan",
        "party-date",
        topic="birthday party",
        when="2026-06-13",
        said="June 13",
    ),
    fact(
        "Maren ordered a nut-free cake from Bakeri Solsikke for the party",
        EVENT,
        ("Maren Holt", "Bakeri Solsikke", "sixth birthday party"),
        "cake",
    ),
    fact(
        "Eight kids from Otto's kindergarten class are coming to the party, plus Ivy and Iva",
        PLAN,
        ("Otto", "Ivy", "Iva", "sixth birthday party"),
        "guests",
        topic="party guests",
    ),
    fact(
        "Pilar discharged Maren after six physio sessions in all",
        EVENT,
        ("Maren Holt", "Pilar Ocampo"),
        "physio-done",
        "physio-done@1",
        when="2026-06-07",
        said="today",
    ),
    fact(
        "Maren's family will visit Greta in Stavanger the first weekend after Crete",
        PLAN,
        ("Maren Holt", "Greta Sandvik", "Stavanger", "Crete"),
        "visit-plan",
        topic="stavanger visit",
    ),
    fact(
        "Otto's EpiPen goes in Maren's hand luggage for Crete",
        PLAN,
        ("Otto", "Maren Holt", "Crete"),
        "packing",
        topic="epipen",
    ),
    fact(
        "On the flight to Chania on 2026-07-06 Maren is in seat 14C and Ivy in 14B",
        PLAN,
        ("Maren Holt", "Ivy", "Chania"),
        "seats@2",
        topic="crete flight",
        when="2026-07-06",
        said="2026-07-06",
    ),
)

SCENARIO = Scenario(
    id="long-tape-family-year",
    description="A 200+ turn family notebook over ten dated sessions from January to June: look-alike names "
    "(Greta and Gerda, Ivy and Iva, Bergen and Bergamo), a mother's move, a husband's job change, a lesson day "
    "that moves, a cancelled and rebooked holiday, a knee through six physio sessions, an allergy and a seat "
    "preference stated once, and a travel booking tool result.",
    tags=("long", "tune", "family", "people", "events", "temporal", "tool-facts", "aliases", "deadlines"),
    seed=20260111,
    sessions=SESSIONS,
    entities=ENTITIES,
    relations=RELATIONS,
    questions=QUESTIONS,
    filler=home_filler,
    facts=FACTS,
)
