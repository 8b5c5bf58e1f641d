"""greeting-operator: the Greeting operator (demo.example.com/v1), an aiokcm controller plug-in."""
