"""A runner's notes on training, climbing and friends, over ten dated sessions two weeks apart.

A coach called Ewan Baird and a newcomer called Euan Beard, a climbing partner Callie and her
brother Cal; a friend who moves twice, a coach who steps down, a book club that changes venue,
a race goal and a longest run that change, a hostel rebooked; a trip planned in one session and
dated in another; diets and habits stated once; calendar and fitness tool results.
"""

from __future__ import annotations

from long_scenarios.kit import (
    AGGREGATION,
    MULTI,
    PREFERENCE,
    SINGLE,
    TEMPORAL,
    Scenario,
    ask,
    assistant,
    block,
    call,
    entity,
    home_filler,
    relation,
    result,
    session,
    unknown,
    user,
)

SESSIONS = (
    session(
        "2026-03-01T07:40:00+00:00",
        block(
            "intro",
            user(
                "Hey, I'm Jules Abara. I want to keep track of my running, my climbing and my friends' lives, "
                "because I'm terrible at remembering."
            ),
            assistant("Hi Jules! I'll keep track of all of it."),
        ),
        block(
            "club",
            user("I run with the Kelvin Harriers, a running club here in Glasgow. Our coach is Ewan Baird."),
            assistant("Noted: the Kelvin Harriers in Glasgow, coached by Ewan Baird."),
        ),
        block(
            "half-plan",
            user("I'm thinking of doing a half marathon this autumn."),
            assistant("Noted: a half marathon this autumn."),
        ),
        block(
            "mornings",
            user("I'm a morning runner: before 7am or not at all."),
            assistant("Noted: your runs go before 7am."),
        ),
        block(
            "tomi",
            user("My oldest friend Tomi Adewale lives in Glasgow too, we met at uni."),
            assistant("Noted: Tomi Adewale, your oldest friend, in Glasgow."),
        ),
    ),
    session(
        "2026-03-15T08:05:00+00:00",
        block(
            "race-1",
            user("Signed up for the Riverbank Half on September 20! Goal: under 1:50."),
            assistant("Great: the Riverbank Half on September 20, goal under 1:50. That's your first race of the year."),
        ),
        block(
            "callie",
            user("My climbing partner is Callie Munro. We climb at Ascent Wall on Wednesday nights."),
            assistant("Noted: Callie Munro, Ascent Wall, Wednesday nights."),
        ),
        block(
            "cal",
            user("Don't confuse her with her brother Cal Munro, who's in my book club."),
            assistant("Noted: Cal Munro is Callie's brother and in your book club."),
        ),
        block(
            "book-club",
            user("The book club is the Tuesday Readers; we meet at Cafe Strathmore on the first Tuesday of the month."),
            assistant("Noted: the Tuesday Readers meet at Cafe Strathmore, first Tuesday of the month."),
        ),
    ),
    session(
        "2026-03-29T07:55:00+00:00",
        block(
            "lactose",
            user("Note for dinners out: I'm lactose intolerant, so nothing creamy for me."),
            assistant("Noted: you're lactose intolerant."),
        ),
        block(
            "callie-veg",
            user("And Callie is vegetarian, so pick places with real veggie options when we eat out."),
            assistant("Noted: Callie is vegetarian."),
        ),
        block(
            "tomi-plan",
            user("Tomi got a job at the University of Dundee and is moving to Dundee next month."),
            assistant("Noted: Tomi is moving to Dundee for a job at the University of Dundee."),
        ),
        block(
            "euan",
            user("Funny thing: a new guy joined the club, Euan Beard. Ewan Baird and Euan Beard, coach and newbie."),
            assistant("Ha, noted: Euan Beard is new at the Kelvin Harriers; Ewan Baird is the coach."),
        ),
    ),
    session(
        "2026-04-12T07:30:00+00:00",
        block(
            "race-2",
            user("Also signed up for the Bellahouston 10K on May 17."),
            assistant("Noted: the Bellahouston 10K on May 17. That's two races now."),
        ),
        block(
            "tomi-dundee",
            user("Tomi's moved to Dundee. Miss him already."),
            assistant("Updated: Tomi Adewale lives in Dundee now."),
        ),
        block(
            "skye-plan",
            user("Callie and I want to do a hiking trip on the Isle of Skye this summer."),
            assistant("Sounds amazing. Noted: a Skye trip with Callie this summer."),
        ),
        block(
            "long-run",
            user("When's the next club long run?"),
            call("calendar.list_events", {"calendar": "Kelvin Harriers", "from": "2026-04-12"}),
            result(
                "calendar.list_events",
                {
                    "events": [
                        {
                            "title": "Club long run",
                            "date": "2026-04-18",
                            "start": "07:00",
                            "meeting_point": "Kelvingrove bandstand",
                            "distance_km": 16,
                        }
                    ]
                },
            ),
            assistant("The next club long run is on April 18 at 07:00 from the Kelvingrove bandstand, 16 km."),
        ),
    ),
    session(
        "2026-04-26T08:10:00+00:00",
        block(
            "coach-change",
            user("Club news: Ewan Baird is stepping down as coach, and Morag Innes takes over from May."),
            assistant("Updated: Morag Innes coaches the Kelvin Harriers from May."),
        ),
        block(
            "venue-change",
            user("The Tuesday Readers are moving from Cafe Strathmore to Hillhead Library, the cafe got too loud."),
            assistant("Updated: the book club meets at Hillhead Library now."),
        ),
        block(
            "activity",
            user("Can you log today's long run?"),
            call("fitness.get_activity", {"date": "2026-04-26"}),
            result(
                "fitness.get_activity",
                {"date": "2026-04-26", "type": "run", "distance_km": 18.2, "duration": "1:41:05", "route": "Clyde Walkway"},
            ),
            assistant("Logged: 18.2 km on the Clyde Walkway in 1:41:05, your longest run so far."),
        ),
    ),
    session(
        "2026-05-10T07:45:00+00:00",
        block(
            "skye-dates",
            user("Skye is booked: August 14 to 17, Callie and me, at the Cuillin View Hostel."),
            assistant("Booked and noted: the Cuillin View Hostel, August 14 to 17."),
        ),
        block(
            "callie-birthday",
            user("Callie turns 30 on July 11. I want to organise a dinner."),
            assistant("Noted: Callie's 30th on July 11, a dinner to organise."),
        ),
        block(
            "goal-change",
            user("Morag thinks I can go faster: my new goal for the Riverbank Half is under 1:45."),
            assistant("Updated: the Riverbank Half goal is now under 1:45."),
        ),
    ),
    session(
        "2026-05-24T08:20:00+00:00",
        block(
            "ten-k",
            user("Ran the Bellahouston 10K in 47:30, a personal best!"),
            assistant("Congratulations on the PB: 47:30."),
        ),
        block(
            "tomi-plan-2",
            user("Tomi's contract in Dundee was only a short one, and now he has a permanent job in Aberdeen. Moving again in June!"),
            assistant("Noted: Tomi moves to Aberdeen in June."),
        ),
        block(
            "dinner-place",
            user("For Callie's birthday dinner I booked Bistro Rosa, they have a great vegetarian menu."),
            assistant("Booked: Bistro Rosa for Callie's 30th."),
        ),
    ),
    session(
        "2026-06-07T07:35:00+00:00",
        block(
            "race-3",
            user("Signed up for the Campsie Fells trail race on October 4, my first trail race."),
            assistant(
                "Noted: the Campsie Fells trail race on October 4. That's three races this year: the Riverbank "
                "Half, the Bellahouston 10K and the Campsie Fells trail race."
            ),
        ),
        block(
            "tomi-aberdeen",
            user("Tomi's settled in Aberdeen, he sent photos of his new flat by the harbour."),
            assistant("Updated: Tomi lives in Aberdeen."),
        ),
        block(
            "karaoke",
            user("Tomi will come down for Callie's dinner, but no karaoke afterwards: he hates karaoke."),
            assistant("Noted: no karaoke for Tomi."),
        ),
    ),
    session(
        "2026-06-21T08:00:00+00:00",
        block(
            "guests",
            user("Cal and Tomi are both coming to Callie's dinner."),
            assistant("Noted: Cal and Tomi are coming."),
        ),
        block(
            "dinner-calendar",
            user("Put the dinner in my calendar."),
            call(
                "calendar.create_event",
                {
                    "title": "Callie's 30th birthday dinner",
                    "date": "2026-07-11",
                    "start": "19:30",
                    "location": "Bistro Rosa",
                },
            ),
            result(
                "calendar.create_event",
                {"status": "created", "title": "Callie's 30th birthday dinner", "date": "2026-07-11"},
            ),
            assistant("Added: Callie's 30th birthday dinner, July 11 at 19:30, Bistro Rosa."),
        ),
        block(
            "longest",
            user("Longest run ever today: 21 km with Morag's group."),
            assistant("Brilliant: 21 km, your new longest run."),
        ),
    ),
    session(
        "2026-07-05T07:50:00+00:00",
        block(
            "hostel-change",
            user("The Cuillin View Hostel overbooked, so we're at the Portree Bunkhouse instead, same dates."),
            assistant("Updated: the Portree Bunkhouse, August 14 to 17."),
        ),
        block(
            "tent",
            user("Callie is lending me her spare tent for the Skye trip, just in case."),
            assistant("Noted: Callie's spare tent for the Skye trip."),
        ),
    ),
)

ENTITIES = (
    entity("Jules Abara", "person", "Jules"),
    entity("Kelvin Harriers", "organization"),
    entity("Glasgow", "location"),
    entity("Ewan Baird", "person"),
    entity("Morag Innes", "person", "Morag", role="coach"),
    entity("Euan Beard", "person"),
    entity("Tomi Adewale", "person", "Tomi"),
    entity("University of Dundee", "organization"),
    entity("Dundee", "location"),
    entity("Aberdeen", "location"),
    entity("Riverbank Half", "event", date="September 20"),
    entity("Bellahouston 10K", "event", date="May 17"),
    entity("Campsie Fells trail race", "event", date="October 4"),
    entity("Callie Munro", "person", "Callie"),
    entity("Cal Munro", "person", "Cal"),
    entity("Ascent Wall", "location"),
    entity("Tuesday Readers", "organization"),
    entity("Cafe Strathmore", "location"),
    entity("Hillhead Library", "location"),
    entity("Isle of Skye", "location", "Skye"),
    entity("Skye trip", "event", date="August 14 to 17"),
    entity("Cuillin View Hostel", "location"),
    entity("Portree Bunkhouse", "location"),
    entity("Club long run", "event", date="2026-04-18"),
    entity("Kelvingrove bandstand", "location"),
    entity("Clyde Walkway", "location"),
    entity("Callie's 30th birthday dinner", "event", date="July 11"),
    entity("Bistro Rosa", "location"),
)

RELATIONS = (
    relation("Jules Abara", "member_of", "Kelvin Harriers"),
    relation("Jules Abara", "lives_in", "Glasgow"),
    relation("Kelvin Harriers", "located_in", "Glasgow"),
    relation("Ewan Baird", "manages", "Kelvin Harriers"),
    relation("Morag Innes", "manages", "Kelvin Harriers"),
    relation("Euan Beard", "member_of", "Kelvin Harriers"),
    relation("Jules Abara", "knows", "Tomi Adewale"),
    relation("Tomi Adewale", "lives_in", "Glasgow"),
    relation("Tomi Adewale", "lives_in", "Dundee"),
    relation("Tomi Adewale", "lives_in", "Aberdeen"),
    relation("Tomi Adewale", "works_for", "University of Dundee"),
    relation("Jules Abara", "attends", "Riverbank Half"),
    relation("Jules Abara", "attends", "Bellahouston 10K"),
    relation("Jules Abara", "attends", "Campsie Fells trail race"),
    relation("Jules Abara", "knows", "Callie Munro"),
    relation("Callie Munro", "family_of", "Cal Munro"),
    relation("Jules Abara", "member_of", "Tuesday Readers"),
    relation("Cal Munro", "member_of", "Tuesday Readers"),
    relation("Tuesday Readers", "located_in", "Cafe Strathmore"),
    relation("Tuesday Readers", "located_in", "Hillhead Library"),
    relation("Skye trip", "located_in", "Isle of Skye"),
    relation("Cuillin View Hostel", "located_in", "Isle of Skye"),
    relation("Portree Bunkhouse", "located_in", "Isle of Skye"),
    relation("Jules Abara", "attends", "Skye trip"),
    relation("Callie Munro", "attends", "Skye trip"),
    relation("Club long run", "part_of", "Kelvin Harriers"),
    relation("Club long run", "located_in", "Kelvingrove bandstand"),
    relation("Callie's 30th birthday dinner", "located_in", "Bistro Rosa"),
    relation("Cal Munro", "attends", "Callie's 30th birthday dinner"),
    relation("Tomi Adewale", "attends", "Callie's 30th birthday dinner"),
)

QUESTIONS = (
    ask("Where does Tomi Adewale live now?", "Aberdeen", TEMPORAL, "tomi-aberdeen"),
    ask("Where did Tomi live before Aberdeen?", "Dundee", TEMPORAL, "tomi-dundee"),
    ask("Where did Tomi live when Jules started these notes?", "Glasgow", TEMPORAL, "tomi"),
    ask("Who coaches the Kelvin Harriers now?", "Morag Innes", TEMPORAL, "coach-change"),
    ask("Who coached the Kelvin Harriers before Morag Innes?", "Ewan Baird", TEMPORAL, "club"),
    ask("Where do the Tuesday Readers meet now?", "Hillhead Library", TEMPORAL, "venue-change"),
    ask("What is Jules's goal for the Riverbank Half now?", "under 1:45", TEMPORAL, "goal-change"),
    ask("What was Jules's first goal for the Riverbank Half?", "under 1:50", TEMPORAL, "race-1"),
    ask("Where are Jules and Callie staying on Skye?", "Portree Bunkhouse", TEMPORAL, "hostel-change"),
    ask("Which hostel did they book first for Skye?", "Cuillin View Hostel", TEMPORAL, "skye-dates"),
    ask("What is Jules's longest run now?", "21 km", TEMPORAL, "longest"),
    ask("When is the Riverbank Half?", "September 20", SINGLE, "race-1"),
    ask("Where does Jules climb with Callie?", "Ascent Wall", SINGLE, "callie"),
    ask("Who is Callie's brother?", "Cal Munro", SINGLE, "cal"),
    ask("What was Jules's time in the Bellahouston 10K?", "47:30", SINGLE, "ten-k"),
    ask("Who joined the club with a name like the coach's?", "Euan Beard", SINGLE, "euan"),
    ask("Where does the club long run on April 18 start?", "Kelvingrove bandstand", SINGLE, "long-run@2"),
    ask("Which route was the 18.2 km run on?", "Clyde Walkway", SINGLE, "activity@2"),
    ask("Where did Tomi get a job when he moved to Dundee?", "University of Dundee", SINGLE, "tomi-plan"),
    ask("When is the Skye trip?", "August 14 to 17", MULTI, "skye-plan", "skye-dates"),
    ask("Where is the birthday dinner for Cal's sister?", "Bistro Rosa", MULTI, "cal", "dinner-place"),
    ask(
        "When is the birthday dinner at Bistro Rosa?",
        "July 11",
        MULTI,
        "callie-birthday",
        "dinner-place",
        "dinner-calendar@1",
        accepted=("2026-07-11",),
    ),
    ask("What diet does Callie follow?", "vegetarian", PREFERENCE, "callie-veg"),
    ask("When does Jules like to run?", "before 7am", PREFERENCE, "mornings"),
    ask("What food intolerance does Jules have?", "lactose intolerant", PREFERENCE, "lactose"),
    ask("What does Tomi hate?", "karaoke", PREFERENCE, "karaoke"),
    ask(
        "Which races has Jules signed up for this year?",
        "the Riverbank Half, the Bellahouston 10K and the Campsie Fells trail race",
        AGGREGATION,
        "race-1",
        "race-2",
        "race-3",
        "race-3@1",
    ),
    unknown("What is Callie's job?"),
    unknown("How old is Tomi Adewale?"),
    unknown("Where does Cal Munro live?"),
)

SCENARIO = Scenario(
    id="long-tape-friends-and-hobbies",
    description="A 200+ turn runner's notebook over ten dated sessions from March to July: look-alike names "
    "(Ewan Baird and Euan Beard, Callie and Cal), a friend who moves twice, a new coach, a book club that "
    "changes venue, a race goal and a hostel that change, a trip planned in one session and dated in another, "
    "diets and habits stated once, and calendar and fitness tool results.",
    tags=("long", "tune", "people", "events", "temporal", "tool-facts", "aliases", "deadlines"),
    seed=20260301,
    sessions=SESSIONS,
    entities=ENTITIES,
    relations=RELATIONS,
    questions=QUESTIONS,
    filler=home_filler,
)
