"""Common given names (international, capitalised), for the best-effort name rule in
`redact.py`: a capitalised word from this list after "for", "from", "customer", "user"
or "client" is taken for a person. Teams with a directory add theirs with
`--redact-names FILE`."""

_NAMES = """
Aaron Abdul Adam Adrian Agnieszka Ahmed Aisha Alan Albert Alejandro Alex Alexander Alexandra Ali
Alice Alicia Amanda Amelia Amir Amy Ana Andrea Andreas Andrew Andrzej Angela Anita Ann Anna Anne
Anthony Antonio Arjun Ashley Barbara Ben Benjamin Bernd Beth Betty Bill Bob Brandon Brian Bruno
Carl Carla Carlos Carmen Caroline Catherine Charles Charlie Chen Chloe Chris Christian Christina
Christine Christopher Claire Claudia Daniel Daniela David Deborah Dennis Diana Diego Dmitri Donald
Donna Dorothy Edward Elena Elizabeth Ella Emily Emma Eric Erik Eva Fatima Felix Fernando Florian
Francesca Francisco Frank Gabriel Gary George Georg Giovanni Giulia Grace Gregory Hannah Hans
Harry Heather Helen Henrik Hiroshi Hugo Ian Igor Irene Isabel Isabella Ivan Jack Jacob James Jan
Jane Janet Jason Javier Jean Jennifer Jens Jessica Joan Joanna Johannes John Jonas Jonathan Jorge
Jose Joseph Joshua Juan Julia Julian Julie Jurgen Karen Karin Katarzyna Kate Katharina Kathleen
Katrin Kenji Kevin Kim Klaus Laura Lars Lauren Leon Li Linda Lisa Liam Lucas Lucia Luis Lukas Maria
Marie Mark Marta Martin Mary Matteo Matthew Max Maximilian Mehmet Melissa Michael Michelle Miguel
Mohammed Monika Nancy Natalia Nicholas Nicole Nina Noah Olga Oliver Olivia Pablo Patricia Patrick
Paul Paula Pedro Peter Petra Philipp Piotr Priya Rachel Rahul Raj Rebecca Richard Robert Ronald
Rosa Ryan Sabine Sandra Sara Sarah Scott Sebastian Sergei Sharon Sophie Stefan Stefanie Stephanie
Stephen Steven Susan Sven Thomas Tim Timothy Tobias Tom Tomasz Ursula Valentina Victoria Vincent
Walter Wei William Wolfgang Yuki Yusuf Zoe
"""
GIVEN_NAMES = frozenset(_NAMES.split())
