"""A job change and a move between cities, over ten dated sessions from May to August.

Solace Health and Solstice Health, Chorlton and Chorley, Salford and Stafford; a job change, a
start date pushed back, a manager named in the offer who moves on before day one, a home that
changes three times (Leeds, a temporary flat in Salford, Chorlton), a partner's hospital
transfer; flat requirements stated once and used at the viewings, counted viewings; calendar and
mail tool results.
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
        "2026-05-18T18:30:00+00:00",
        block(
            "intro",
            user(
                "Hi, I'm Rory Calder. I'm job hunting and probably moving cities, so I need one place to keep "
                "it all straight."
            ),
            assistant("Hi Rory, happy to help keep it straight."),
        ),
        block(
            "current-job",
            user("Right now I'm a data analyst at Brightwave Media in Leeds. My manager is Gemma Lowry."),
            assistant("Noted: data analyst at Brightwave Media in Leeds, manager Gemma Lowry."),
        ),
        block(
            "home",
            user("My partner Isla Fenwick and I live in Leeds. She's a nurse at Aire Valley Hospital."),
            assistant("Noted: you and Isla Fenwick live in Leeds; she's a nurse at Aire Valley Hospital."),
        ),
        block(
            "recruiter",
            user(
                "A recruiter, Hollie Marsh from Talentbridge, is helping me. She's lined up two companies: "
                "Solace Health in Manchester and Tandem Freight in Liverpool."
            ),
            assistant("Noted: Hollie Marsh (Talentbridge); Solace Health in Manchester and Tandem Freight in Liverpool."),
        ),
    ),
    session(
        "2026-05-26T19:00:00+00:00",
        block(
            "interview",
            user("Book my first Solace Health interview."),
            call(
                "calendar.create_event",
                {
                    "title": "Solace Health interview",
                    "date": "2026-06-02",
                    "start": "10:00",
                    "location": "video call",
                    "attendees": ["Rory Calder", "Anjali Rao"],
                },
            ),
            result("calendar.create_event", {"status": "created", "title": "Solace Health interview", "date": "2026-06-02"}),
            assistant("Booked: the Solace Health interview on June 2 at 10:00 by video call, with Anjali Rao."),
        ),
        block(
            "anjali",
            user("Anjali Rao is the hiring manager at Solace Health; she runs their analytics team."),
            assistant("Noted: Anjali Rao, hiring manager, runs the analytics team at Solace Health."),
        ),
        block(
            "tandem",
            user("Tandem Freight's phone screen is with Ollie Brennan on May 29."),
            assistant("Noted: Tandem Freight phone screen with Ollie Brennan, May 29."),
        ),
        block(
            "cycle",
            user("Whatever job I take, I want to cycle to work. No car, no long commutes."),
            assistant("Noted: it has to be within cycling distance."),
        ),
    ),
    session(
        "2026-06-03T18:45:00+00:00",
        block(
            "interview-done",
            user("The Solace interview went well! Anjali invited me to an onsite."),
            assistant("Great news!"),
        ),
        block(
            "tandem-out",
            user("Tandem Freight went with another candidate, so it's just Solace now."),
            assistant("Noted: Tandem Freight is out."),
        ),
        block(
            "solstice",
            user(
                "Weird: I got an email from Solstice Health, not Solace Health, about a contract role in "
                "Stafford. Not interested."
            ),
            assistant("Noted: Solstice Health is not Solace Health, and you're not interested."),
        ),
        block(
            "onsite",
            user("The onsite at Solace Health is on June 16, at their office on Oxford Road in Manchester."),
            assistant("Noted: the Solace Health onsite, June 16, Oxford Road, Manchester."),
        ),
    ),
    session(
        "2026-06-10T19:20:00+00:00",
        block(
            "isla-wants",
            user("Isla says if we move, she wants a flat with a garden, or at least a balcony."),
            assistant("Noted: Isla wants a garden, or at least a balcony."),
        ),
        block(
            "rory-wants",
            user("I need a second bedroom to use as an office, and no ground-floor flats."),
            assistant("Noted: a second bedroom for an office, and not on the ground floor."),
        ),
        block(
            "gemma",
            user("Had my 1:1 with Gemma today; I haven't told her anything yet."),
            assistant("Understood, nothing said yet."),
        ),
    ),
    session(
        "2026-06-17T18:10:00+00:00",
        block(
            "offer",
            user("Solace Health made an offer: Senior Data Analyst, starting July 13!"),
            assistant("Congratulations! Senior Data Analyst at Solace Health, starting July 13."),
        ),
        block(
            "offer-email",
            user("Find the offer email, I want the details."),
            call("mail.search", {"query": "Solace Health offer", "limit": 1}),
            result(
                "mail.search",
                {
                    "results": [
                        {
                            "from": "Anjali Rao",
                            "subject": "Offer - Senior Data Analyst",
                            "body": "Dear Rory, we are delighted to offer you the role of Senior Data Analyst on "
                            "the Analytics team. You will report to Kwame Asante, Analytics Lead. Proposed start "
                            "date: July 13. Location: Oxford Road, Manchester.",
                        }
                    ]
                },
            ),
            assistant(
                "The offer from Anjali Rao: Senior Data Analyst on the Analytics team, reporting to Kwame "
                "Asante (Analytics Lead), starting July 13, at Oxford Road in Manchester."
            ),
        ),
        block(
            "accept",
            user("I accepted! Resigning from Brightwave tomorrow."),
            assistant("Congratulations, Rory!"),
        ),
    ),
    session(
        "2026-06-24T19:05:00+00:00",
        block(
            "resign",
            user("Told Gemma. My last day at Brightwave Media is July 3."),
            assistant("Noted: your last day at Brightwave Media is July 3."),
        ),
        block(
            "temporary",
            user("We found a temporary flat in Salford for the first month, while we look for a place."),
            assistant("Noted: a temporary flat in Salford for the first month."),
        ),
        block(
            "viewing-1",
            user("Viewing one: a flat in Didsbury. Nice, but it's on the ground floor."),
            assistant("Viewing 1: Didsbury, ground floor, so that's a no."),
        ),
        block(
            "viewing-2",
            user("Viewing two: a second-floor flat in Chorlton with a balcony and a second bedroom."),
            assistant("Viewing 2: Chorlton, second floor, balcony, second bedroom. Promising."),
        ),
        block(
            "chorley",
            user("Hollie thought I said Chorley, not Chorlton, and sent me listings in Chorley. Totally different town."),
            assistant("Noted: Chorlton, not Chorley."),
        ),
    ),
    session(
        "2026-07-01T18:40:00+00:00",
        block(
            "start-moved",
            user("Solace asked to push my start date to July 27, their onboarding group moved."),
            assistant("Updated: you start at Solace Health on July 27 (it was July 13)."),
        ),
        block(
            "viewing-3",
            user("Viewing three: another Chorlton flat, but no balcony. Pass."),
            assistant("Viewing 3: Chorlton, no balcony, a pass. That's three viewings so far."),
        ),
        block(
            "in-salford",
            user("We're in the Salford flat now. Boxes everywhere."),
            assistant("Updated: you and Isla are living in Salford for now."),
        ),
    ),
    session(
        "2026-07-08T19:30:00+00:00",
        block(
            "signed",
            user(
                "We signed for the Chorlton flat from viewing two! It's on Wilbraham Road, through Redbrick "
                "Lettings. We move in on August 1."
            ),
            assistant("Congratulations! The Chorlton flat on Wilbraham Road, through Redbrick Lettings, from August 1."),
        ),
        block(
            "isla-transfer",
            user("Isla got a transfer to Irwell Hospital in Manchester, starting in August."),
            assistant("Great news: Isla moves to Irwell Hospital in August."),
        ),
        block(
            "bike-route",
            user("Checked the route: Chorlton to Oxford Road is 20 minutes by bike."),
            assistant("Perfect for cycling in."),
        ),
    ),
    session(
        "2026-07-15T18:55:00+00:00",
        block(
            "manager-change",
            user("Heads-up from Anjali: Kwame Asante is moving to the data platform team, so I'll report to Anjali directly."),
            assistant("Updated: you'll report to Anjali Rao, not Kwame Asante."),
        ),
        block(
            "first-day",
            user("What's on my first day?"),
            call("calendar.list_events", {"date": "2026-07-27"}),
            result(
                "calendar.list_events",
                {
                    "events": [
                        {
                            "title": "Solace Health onboarding",
                            "date": "2026-07-27",
                            "start": "09:00",
                            "location": "Oxford Road office",
                            "host": "Anjali Rao",
                        }
                    ]
                },
            ),
            assistant("July 27: Solace Health onboarding at 09:00 at the Oxford Road office, hosted by Anjali Rao."),
        ),
    ),
    session(
        "2026-08-05T19:10:00+00:00",
        block(
            "moved-in",
            user("We've moved into the Chorlton flat! Finally unpacking for good."),
            assistant("Updated: you and Isla live in Chorlton now."),
        ),
        block(
            "first-week",
            user("First full week at Solace done, and I cycled in every day."),
            assistant("Well done!"),
        ),
    ),
)

ENTITIES = (
    entity("Rory Calder", "person", "Rory", role="Senior Data Analyst"),
    entity("Brightwave Media", "organization", "Brightwave"),
    entity("Leeds", "location"),
    entity("Gemma Lowry", "person", "Gemma"),
    entity("Isla Fenwick", "person", "Isla", role="nurse"),
    entity("Aire Valley Hospital", "organization"),
    entity("Irwell Hospital", "organization"),
    entity("Hollie Marsh", "person", "Hollie", role="recruiter"),
    entity("Talentbridge", "organization"),
    entity("Solace Health", "organization", "Solace"),
    entity("Manchester", "location"),
    entity("Tandem Freight", "organization"),
    entity("Liverpool", "location"),
    entity("Anjali Rao", "person", "Anjali", role="hiring manager"),
    entity("Analytics team", "organization"),
    entity("Kwame Asante", "person", role="Analytics Lead"),
    entity("Ollie Brennan", "person"),
    entity("Solstice Health", "organization"),
    entity("Stafford", "location"),
    entity("Oxford Road", "location"),
    entity("Salford", "location"),
    entity("Didsbury", "location"),
    entity("Chorlton", "location"),
    entity("Chorley", "location"),
    entity("Wilbraham Road", "location"),
    entity("Redbrick Lettings", "organization"),
    entity("Solace Health interview", "event", date="June 2"),
    entity("Solace Health onsite", "event", date="June 16"),
    entity("Solace Health onboarding", "event", date="2026-07-27"),
    entity("Oxford Road office", "location"),
)

RELATIONS = (
    relation("Rory Calder", "works_for", "Brightwave Media"),
    relation("Rory Calder", "works_for", "Solace Health"),
    relation("Rory Calder", "reports_to", "Gemma Lowry"),
    relation("Rory Calder", "reports_to", "Kwame Asante"),
    relation("Rory Calder", "reports_to", "Anjali Rao"),
    relation("Gemma Lowry", "works_for", "Brightwave Media"),
    relation("Brightwave Media", "located_in", "Leeds"),
    relation("Rory Calder", "partner_of", "Isla Fenwick"),
    relation("Rory Calder", "lives_in", "Leeds"),
    relation("Isla Fenwick", "lives_in", "Leeds"),
    relation("Rory Calder", "lives_in", "Salford"),
    relation("Isla Fenwick", "lives_in", "Salford"),
    relation("Rory Calder", "lives_in", "Chorlton"),
    relation("Isla Fenwick", "lives_in", "Chorlton"),
    relation("Isla Fenwick", "works_for", "Aire Valley Hospital"),
    relation("Isla Fenwick", "works_for", "Irwell Hospital"),
    relation("Irwell Hospital", "located_in", "Manchester"),
    relation("Hollie Marsh", "works_for", "Talentbridge"),
    relation("Solace Health", "located_in", "Manchester"),
    relation("Tandem Freight", "located_in", "Liverpool"),
    relation("Ollie Brennan", "works_for", "Tandem Freight"),
    relation("Anjali Rao", "works_for", "Solace Health"),
    relation("Anjali Rao", "manages", "Analytics team"),
    relation("Rory Calder", "member_of", "Analytics team"),
    relation("Analytics team", "part_of", "Solace Health"),
    relation("Kwame Asante", "member_of", "Analytics team"),
    relation("Oxford Road", "located_in", "Manchester"),
    relation("Wilbraham Road", "located_in", "Chorlton"),
    relation("Rory Calder", "attends", "Solace Health interview"),
    relation("Anjali Rao", "attends", "Solace Health interview"),
    relation("Rory Calder", "attends", "Solace Health onsite"),
    relation("Solace Health onsite", "located_in", "Oxford Road"),
    relation("Rory Calder", "attends", "Solace Health onboarding"),
    relation("Anjali Rao", "attends", "Solace Health onboarding"),
    relation("Solace Health onboarding", "located_in", "Oxford Road office"),
)

QUESTIONS = (
    ask("Where do Rory and Isla live now?", "Chorlton", TEMPORAL, "moved-in"),
    ask("Where did Rory and Isla stay while they looked for a flat?", "Salford", TEMPORAL, "temporary", "in-salford"),
    ask("Where did Rory live before the move?", "Leeds", TEMPORAL, "home"),
    ask("Where does Rory work now?", "Solace Health", TEMPORAL, "offer", "accept"),
    ask("Where did Rory work before Solace Health?", "Brightwave Media", TEMPORAL, "current-job"),
    ask("When does Rory start at Solace Health now?", "July 27", TEMPORAL, "start-moved"),
    ask("What was Rory's first start date at Solace Health?", "July 13", TEMPORAL, "offer"),
    ask("Who does Rory report to now?", "Anjali Rao", TEMPORAL, "manager-change", accepted=("Anjali",)),
    ask("Who was Rory to report to according to the offer?", "Kwame Asante", TEMPORAL, "offer-email@2"),
    ask("Where does Isla work now?", "Irwell Hospital", TEMPORAL, "isla-transfer"),
    ask("Where did Isla work in Leeds?", "Aire Valley Hospital", TEMPORAL, "home"),
    ask("Who is Rory's recruiter?", "Hollie Marsh", SINGLE, "recruiter"),
    ask("Where is Tandem Freight based?", "Liverpool", SINGLE, "recruiter"),
    ask(
        "When was the first Solace Health interview?",
        "June 2",
        SINGLE,
        "interview@1",
        "interview@3",
        accepted=("2026-06-02",),
    ),
    ask("Which street is the Solace Health office on?", "Oxford Road", SINGLE, "onsite"),
    ask("Who did Rory have the Tandem Freight phone screen with?", "Ollie Brennan", SINGLE, "tandem"),
    ask("Which company emailed Rory about a contract role in Stafford?", "Solstice Health", SINGLE, "solstice"),
    ask("What was Rory's last day at Brightwave Media?", "July 3", SINGLE, "resign"),
    ask("When do Rory and Isla move into the Chorlton flat?", "August 1", SINGLE, "signed"),
    ask("Which street is the Chorlton flat on?", "Wilbraham Road", SINGLE, "signed"),
    ask("How long is the bike ride from Chorlton to Oxford Road?", "20 minutes", SINGLE, "bike-route"),
    ask(
        "Which letting agent handled the flat from the second viewing?",
        "Redbrick Lettings",
        MULTI,
        "viewing-2",
        "signed",
    ),
    ask(
        "What job was Rory offered by the company with the office on Oxford Road?",
        "Senior Data Analyst",
        MULTI,
        "onsite",
        "offer",
    ),
    ask("What does Rory need in a flat?", "a second bedroom to use as an office", PREFERENCE, "rory-wants"),
    ask("What does Isla want in a flat?", "a garden, or at least a balcony", PREFERENCE, "isla-wants"),
    ask("How does Rory want to get to work?", "cycle to work", PREFERENCE, "cycle"),
    ask(
        "How many flat viewings had Rory done by the start of July?",
        "three",
        AGGREGATION,
        "viewing-1",
        "viewing-2",
        "viewing-3",
        "viewing-3@1",
    ),
    ask(
        "Which companies did Hollie line up for Rory?",
        "Solace Health in Manchester and Tandem Freight in Liverpool",
        AGGREGATION,
        "recruiter",
    ),
    unknown("What is Rory's salary at Solace Health?"),
    unknown("How much is the rent on the Chorlton flat?"),
    unknown("How old is Isla Fenwick?"),
)

# What people said that no relation holds: what they want in a flat and a commute, plans that change (the
# start date, the manager, the home), the viewings, dated events. A fact about Rory ("I ...") also cites
# the intro, where Rory gives a name.
FACTS = (
    fact(
        "Rory is a data analyst at Brightwave Media in Leeds",
        STATE,
        ("Rory Calder", "Brightwave Media"),
        "current-job",
        topic="job",
    ),
    fact(
        "Isla Fenwick is a nurse at Aire Valley Hospital",
        STATE,
        ("Isla Fenwick", "Aire Valley Hospital"),
        "home",
        topic="job",
    ),
    fact(
        "Hollie Marsh from Talentbridge lined up two companies for Rory: Solace Health in Manchester and "
        "Tandem Freight in Liverpool",
        EVENT,
        ("Hollie Marsh", "Rory Calder", "Solace Health", "Tandem Freight"),
        "recruiter",
    ),
    fact(
        "Rory's first Solace Health interview is a video call on 2026-06-02 at 10:00 with Anjali Rao",
        PLAN,
        ("Rory Calder", "Solace Health interview", "Anjali Rao"),
        "interview",
        "interview@1",
        topic="interview",
        when="2026-06-02",
        said="2026-06-02",
    ),
    fact(
        "Tandem Freight's phone screen is with Ollie Brennan on May 29",
        PLAN,
        ("Tandem Freight", "Ollie Brennan"),
        "tandem",
        topic="phone screen",
        when="2026-05-29",
        said="May 29",
    ),
    fact(
        "Whatever job Rory takes, he wants to cycle to work: no car, no long commutes",
        PREFERENCE,
        "Rory Calder",
        "intro",
        "cycle",
        topic="commute",
    ),
    fact(
        "The Solace interview went well and Anjali invited Rory to an onsite",
        EVENT,
        ("Rory Calder", "Anjali Rao", "Solace Health"),
        "interview-done",
    ),
    fact("Tandem Freight went with another candidate", EVENT, ("Tandem Freight", "Rory Calder"), "tandem-out"),
    fact(
        "Rory is not interested in the contract role in Stafford that Solstice Health emailed about",
        OPINION,
        ("Rory Calder", "Solstice Health", "Stafford"),
        "solstice",
    ),
    fact(
        "The Solace Health onsite is on June 16 at the office on Oxford Road in Manchester",
        PLAN,
        ("Solace Health onsite", "Oxford Road"),
        "onsite",
        topic="schedule",
        when="2026-06-16",
        said="June 16",
    ),
    fact(
        "If they move, Isla wants a flat with a garden, or at least a balcony",
        PREFERENCE,
        "Isla Fenwick",
        "isla-wants",
        topic="flat",
    ),
    fact(
        "Rory needs a second bedroom to use as an office, and no ground-floor flats",
        PREFERENCE,
        "Rory Calder",
        "intro",
        "rory-wants",
        topic="flat",
    ),
    fact(
        "Rory had a 1:1 with Gemma and hasn't told her anything yet",
        EVENT,
        ("Rory Calder", "Gemma Lowry"),
        "gemma",
        when="2026-06-10",
        said="today",
    ),
    fact(
        "Solace Health offered Rory the role of Senior Data Analyst, starting July 13",
        PLAN,
        ("Rory Calder", "Solace Health"),
        "offer",
        topic="start date",
        when="2026-07-13",
        said="July 13",
    ),
    fact(
        "According to the offer, Rory will report to Kwame Asante, Analytics Lead",
        PLAN,
        ("Rory Calder", "Kwame Asante"),
        "offer-email@2",
        topic="manager",
    ),
    fact("Rory accepted the Solace Health offer", EVENT, ("Rory Calder", "Solace Health"), "offer", "accept"),
    fact(
        "Rory is resigning from Brightwave tomorrow",
        PLAN,
        ("Rory Calder", "Brightwave Media"),
        "accept",
        topic="leaving brightwave",
        when="2026-06-18",
        said="tomorrow",
    ),
    fact(
        "Rory told Gemma: his last day at Brightwave Media is July 3",
        PLAN,
        ("Rory Calder", "Brightwave Media", "Gemma Lowry"),
        "resign",
        topic="leaving brightwave",
        when="2026-07-03",
        said="July 3",
    ),
    fact(
        "Rory and Isla found a temporary flat in Salford for the first month, while they look for a place",
        PLAN,
        ("Rory Calder", "Isla Fenwick", "Salford"),
        "temporary",
        topic="home",
    ),
    fact(
        "Rory's first flat viewing, in Didsbury, was nice but on the ground floor",
        EVENT,
        ("Rory Calder", "Didsbury"),
        "viewing-1",
    ),
    fact(
        "Rory's second viewing was a second-floor flat in Chorlton with a balcony and a second bedroom",
        EVENT,
        ("Rory Calder", "Chorlton"),
        "viewing-2",
    ),
    fact(
        "Hollie thought Rory said Chorley, not Chorlton, and sent listings in Chorley, a totally different town",
        EVENT,
        ("Hollie Marsh", "Chorley", "Chorlton"),
        "chorley",
    ),
    fact(
        "Solace asked to push Rory's start date to July 27 because their onboarding group moved",
        PLAN,
        ("Rory Calder", "Solace Health"),
        "start-moved",
        topic="start date",
        when="2026-07-27",
        said="July 27",
    ),
    fact(
        "Rory's third viewing, another Chorlton flat with no balcony, was a pass",
        EVENT,
        ("Rory Calder", "Chorlton"),
        "viewing-3",
    ),
    fact(
        "Rory has done three flat viewings so far",
        STATE,
        ("Rory Calder", "Chorlton"),
        "viewing-3",
        "viewing-3@1",
        topic="viewings",
    ),
    fact(
        "Rory and Isla are in the Salford flat now, with boxes everywhere",
        STATE,
        ("Rory Calder", "Isla Fenwick", "Salford"),
        "in-salford",
        topic="home",
    ),
    fact(
        "Rory and Isla signed for the Chorlton flat on Wilbraham Road through Redbrick Lettings and move in "
        "on August 1",
        PLAN,
        ("Rory Calder", "Isla Fenwick", "Chorlton", "Wilbraham Road", "Redbrick Lettings"),
        "signed",
        topic="home",
        when="2026-08-01",
        said="August 1",
    ),
    fact(
        "Isla got a transfer to Irwell Hospital in Manchester, starting in August",
        PLAN,
        ("Isla Fenwick", "Irwell Hospital"),
        "isla-transfer",
        topic="job",
        when="2026-08",
        said="in August",
    ),
    fact(
        "The bike ride from Chorlton to Oxford Road is 20 minutes",
        STATE,
        ("Chorlton", "Oxford Road"),
        "bike-route",
        topic="bike ride",
    ),
    fact(
        "Kwame Asante is moving to the data platform team, so Rory will report to Anjali directly",
        PLAN,
        ("Rory Calder", "Kwame Asante", "Anjali Rao"),
        "manager-change",
        topic="manager",
    ),
    fact(
        "Rory's first day starts with Solace Health onboarding on 2026-07-27 at 09:00 at the Oxford Road office, "
        "host Anjali Rao",
        PLAN,
        ("Rory Calder", "Solace Health onboarding", "Oxford Road office", "Anjali Rao"),
        "first-day",
        "first-day@2",
        topic="first day",
        when="2026-07-27",
        said="2026-07-27",
    ),
    fact(
        "Rory and Isla have moved into the Chorlton flat and are unpacking for good",
        STATE,
        ("Rory Calder", "Isla Fenwick", "Chorlton"),
        "moved-in",
        topic="home",
    ),
    fact(
        "Rory finished a first full week at Solace and cycled in every day",
        EVENT,
        ("Rory Calder", "Solace Health"),
        "first-week",
    ),
)

SCENARIO = Scenario(
    id="long-tape-job-change-and-move",
    description="A 200+ turn conversation over ten dated sessions from May to August about a job change and a "
    "move: look-alike names (Solace and Solstice Health, Chorlton and Chorley), a start date pushed back, a "
    "manager who changes before day one, a home that changes three times, a partner's transfer, flat "
    "requirements stated once, and calendar and mail tool results.",
    tags=("long", "test", "people", "events", "temporal", "tool-facts", "aliases", "deadlines"),
    seed=20260518,
    sessions=SESSIONS,
    entities=ENTITIES,
    relations=RELATIONS,
    questions=QUESTIONS,
    filler=home_filler,
    facts=FACTS,
)
