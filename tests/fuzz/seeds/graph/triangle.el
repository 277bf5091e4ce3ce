# edge list, 0-based
0 1
1 2
2 0
3 4
% comment

4 3
