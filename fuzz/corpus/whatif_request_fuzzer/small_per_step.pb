
К{"format":"specplan.trace","version":1,"target":"tiny-target","draft":"tiny-draft","vocab":50,"source":"hand-written fixture for tests/whatif and tests/cli (README: What-if analysis)"}
{"prompt":0,"c":100,"root":1,"continuation":[5,7,9],"marginals":{"tokens":[[5,6],[7,8],[9,10]],"probs":[[0.6,0.3],[0.5,0.4],[0.9,0.05]]},"nodes":{"parents":[-1,0,0,1,1],"tokens":[1,5,6,7,8],"dist_tokens":[[5,6],[7,8],[-1,-1],[9,10],[-1,-1]],"dist_probs":[[0.6,0.3],[0.5,0.4],[0,0],[0.9,0.05],[0,0]]},"draft_s":0.001}
{"prompt":0,"c":104,"root":11,"continuation":[12,13],"marginals":{"tokens":[[14,12],[13,15]],"probs":[[0.5,0.4],[0.7,0.2]]}}
{"prompt":1,"c":10,"root":2,"continuation":[3],"nodes":{"parents":[-1,0],"tokens":[2,3],"dist_tokens":[[3,4],[-1,-1]],"dist_probs":[[0.8,0.1],[0,0]]}}
small.jsonl
h100qwen3-8b"*
controller*dynatree*linear9-Cыт6*?P