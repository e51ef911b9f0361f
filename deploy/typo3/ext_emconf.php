<?php

$EM_CONF[$_EXTKEY] = [
    'title' => 'sitetools: re-index on publish',
    'description' => 'Tells sitetools which pages changed when an editor saves, publishes or clears a page\'s cache, so that the site search and the chat answer from the page as it is now.',
    'category' => 'services',
    'state' => 'stable',
    'version' => '1.0.0',
    'constraints' => [
        'depends' => [
            'php' => '8.2.0-8.4.99',
            'typo3' => '13.4.0-13.4.99',
            'backend' => '13.4.0-13.4.99',
        ],
        'conflicts' => [],
        'suggests' => [
            'headless' => '',
            'scheduler' => '',
        ],
    ],
];
